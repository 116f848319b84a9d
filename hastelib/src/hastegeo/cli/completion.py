"""``haste completion bash|zsh``: a completion script written from the parser itself, so it never drifts.

One bash function serves both shells: zsh runs it through ``bashcompinit``, as the
Azure CLI's completion does. It completes commands (and ``aml``'s), each command's
options, and the values of options with choices (``--output``, ``--workload``, ...).
"""

from __future__ import annotations

import argparse

SCRIPT = """# haste completion ({shell}); load with: source <(haste completion {shell})
{prelude}_haste() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" path="" word i
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" != -* && " $(_haste_commands "$path") " == *" $word "* ]] && path="${{path:+$path }}$word"
    done
    case "$prev" in
{values}    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_haste_options "$path")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_haste_commands "$path")" -- "$cur"))
    fi
}}
_haste_commands() {{
    case "$1" in
{commands}    esac
}}
_haste_options() {{
    case "$1" in
{options}    esac
}}
complete -o default -F _haste haste
"""
ZSH_PRELUDE = (
    "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }\n"
    "autoload -U +X bashcompinit && bashcompinit\n"
)


def _walk(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _walk(sub, f"{path} {name}".strip())
    return found


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    return [
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    ]


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (``bash`` or ``zsh``)."""
    commands, options, values = [], [], {}
    for path, sub in _walk(parser):
        names = _commands(sub)
        if names:
            commands.append(f'        "{path}") echo "{" ".join(names)}" ;;\n')
        flags = [flag for action in sub._actions for flag in action.option_strings if flag.startswith("--")]
        options.append(f'        "{path}") echo "{" ".join(flags)}" ;;\n')
        for action in sub._actions:
            if action.choices and action.option_strings and not isinstance(action, argparse._SubParsersAction):
                for flag in action.option_strings:
                    values[flag] = " ".join(str(choice) for choice in action.choices)
    value_cases = "".join(
        f'        {flag}) COMPREPLY=($(compgen -W "{words}" -- "$cur")); return ;;\n' for flag, words in values.items()
    )
    return SCRIPT.format(
        shell=shell,
        prelude=ZSH_PRELUDE if shell == "zsh" else "",
        values=value_cases,
        commands="".join(commands),
        options="".join(options),
    )
