"""The one deployment package of the Functions app (``make package``, docs/adr/0013).

Every deploy path ships the same files: the package is the repository less what
``.funcignore`` excludes, the rule file that ``azd`` and ``func azure functionapp
publish`` read too, and it is refused when those rules would strip a file that the
platform's remote build (``pip install -r requirements.txt``) needs.
"""
