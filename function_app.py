"""The Functions entry point: build the app and register the blueprints. Nothing else lives here."""

import azure.functions as func

from api.http_routes import bp as http_blueprint
from api.queue_triggers import bp as queue_blueprint
from api.timer_triggers import bp as timer_blueprint
from hastegeo.utils.redaction import install_redacting_filter

install_redacting_filter()

app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
app.register_functions(http_blueprint)
app.register_functions(queue_blueprint)
app.register_functions(timer_blueprint)
