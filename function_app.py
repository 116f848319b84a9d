"""The Functions entry point: build the app and register the blueprints. Nothing else lives here."""

import azure.functions as func

from api.console import bp as console_blueprint
from api.group_routes import bp as group_blueprint
from api.http_routes import bp as http_blueprint
from api.queue_triggers import bp as queue_blueprint
from api.timer_triggers import bp as timer_blueprint
from hastegeo.settings.app import http_auth_level, telemetry_settings
from hastegeo.telemetry.configure import configure_telemetry
from hastegeo.utils.redaction import install_redacting_filter

install_redacting_filter()
# Before the first request: a span started before the SDK is installed would record nothing.
configure_telemetry(telemetry_settings().export)

# HASTE_HTTP_AUTH_LEVEL: anonymous behind App Service authentication (a browser sends its Entra token
# and nothing else), function to ask service callers for a key as well (docs/adr/0007). Routes that
# set their own level (health, openapi.json) keep it.
app = func.FunctionApp(http_auth_level=func.AuthLevel[http_auth_level().name])
app.register_functions(http_blueprint)
app.register_functions(group_blueprint)
app.register_functions(queue_blueprint)
app.register_functions(timer_blueprint)
app.register_functions(console_blueprint)
