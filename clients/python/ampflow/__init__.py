"""ampflow's Python client: standard library only.

    import ampflow
    api = ampflow.Client()            # AMPFLOW_API_URL, AMPFLOW_API_TOKEN
    api.serve("executor", lambda m: ("task_result", do_the_work(m)))

Every call answers the API's JSON as a typed dict (ampflow.models); a
refusal raises the exception of its code (ampflow.errors: errors.Claimed,
errors.NotRunning, errors.LockConflict, ..., all APIError). 429 and 503
are retried with backoff. The loops (serve, aof_serve, mesh_serve) keep
going through refusals and handler errors, logging them on the "ampflow"
logger. The routes and their schemas are in GET /v1/openapi.json; the
guides in docs/guides/ walk through an agent of each kind.
"""

from . import errors, models
from ._retry import Backoff
from .callbacks import Callbacks, callback_secret, verify_signature
from .client import Client
from .errors import APIError

# The major version is the API's (the OpenAPI document's info.version).
__version__ = "1.0.0"

__all__ = ["APIError", "Backoff", "Callbacks", "Client", "callback_secret", "errors", "models", "verify_signature",
           "__version__"]
