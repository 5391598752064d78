"""The API's refusals as exceptions: one class per error code.

Every refusal is {"error": {"code", "message", "fields", ...}} (docs/agents.md,
"Errors"). APIError carries the status, code, message, the fields at fault
(a list of {"path", "problem"}) and the whole answer; a code the API adds
later is raised as APIError itself, so `except APIError` catches it.
"""

__all__ = ["APIError", "error_class", "CODES"]


class APIError(Exception):
    """A refusal of the API: status, code, message, fields and body."""

    code = ""
    status = 0

    def __init__(self, status, body):
        err = body.get("error", body) if isinstance(body, dict) else {}
        if not isinstance(err, dict):
            err = {}
        self.status = status
        self.code = err.get("code", "") or type(self).code
        self.message = err.get("message", str(body))
        self.fields = err.get("fields") or []
        self.detail = err
        self.body = body
        super().__init__("%d %s: %s" % (status, self.code, self.message))


def _classes(table):
    out = {}
    for name, code, status, doc in table:
        out[code] = type(name, (APIError,), {"code": code, "status": status, "__doc__": doc, "__module__": __name__})
    return out


# (class, code, status, doc): the core API's ErrorCode table (GET
# /v1/openapi.json), then each system's own codes.
_TABLE = [
    ("Claimed", "claimed", 409, "Another agent holds the task: its ACK, result or heartbeat came first."),
    ("Conflict", "conflict", 409, "A msg_id, task id, event id or Idempotency-Key reused with another body."),
    ("Decided", "decided", 409, "The decision was answered already."),
    ("Forbidden", "forbidden", 403, "Not allowed for this token."),
    ("InputBudgetSpent", "input_budget_spent", 409, "The task's budget of admin input is spent."),
    ("Internal", "internal", 500, "The server failed."),
    ("Invalid", "invalid", 400, "Malformed input; fields names each field at fault."),
    ("MethodNotAllowed", "method_not_allowed", 405, "The route does not take this method."),
    ("MisdirectedRequest", "misdirected_request", 421, "The request reached the wrong host."),
    ("NotFound", "not_found", 404, "No such task, record, lease or decision."),
    ("RateLimited", "rate_limited", 429, "Over http.rate writing requests a minute; retried by the client."),
    ("StaleDecision", "stale_decision", 409, "The decision changed since its digest was read."),
    ("Suspended", "suspended", 423, "The task waits for an admin."),
    ("TaskEnded", "task_ended", 409, "The task has ended; the message names its final status."),
    ("TooLarge", "too_large", 413, "The body is over the API's bound."),
    ("Unauthenticated", "unauthenticated", 401, "No valid bearer token (or an agent key on a token route)."),
    ("Unavailable", "unavailable", 503, "Temporal or the worker did not answer; retried by the client."),
    ("Unexpected", "unexpected", 409, "Valid, but not what the task expects now; the message says what it does."),
    ("UnsupportedMediaType", "unsupported_media_type", 415, "The body is not application/json."),
    # AOF/1 (docs/aof.md)
    ("InvalidJSON", "invalid_json", 400, "AOF: the message is not JSON."),
    ("InvalidEnvelope", "invalid_envelope", 400, "AOF: the envelope or payload fails its schema; fields names each."),
    ("TaskNotFound", "task_not_found", 404, "AOF: no such task."),
    ("TaskIDMismatch", "taskId_mismatch", 400, "AOF: the envelope's taskId and the payload's differ."),
    ("ParentNotFound", "parent_not_found", 404, "AOF: a handoff's parent task does not exist."),
    ("NestedDelegation", "nested_delegation", 409, "AOF: the parent is a delegated task itself."),
    ("UnknownType", "unknown_type", 400, "AOF: not a message type of AOF/1."),
    ("InvalidTransition", "invalid_transition", 409, "AOF: the status move is not allowed."),
    ("ParentConflict", "parent_conflict", 409, "AOF: the task is linked to another parent already."),
    ("LeaseHeld", "lease_held", 409, "AOF: another agent holds the task's lease."),
    ("NotRunning", "not_running", 409, "AOF: no run of this agent is in progress on the task."),
    # RepoMesh (docs/mesh.md)
    ("LockConflict", "LOCK_CONFLICT", 409, "Mesh: the lease is held; holder and retry_after_ms say by whom and until when."),
    ("InvalidPayload", "INVALID_PAYLOAD", 400, "Mesh: the event is refused; fields names each field at fault."),
    ("PermissionDenied", "PERMISSION_DENIED", 403, "Mesh: the token may not act as that agent."),
    ("TaskClaimConflict", "TASK_CLAIM_CONFLICT", 409, "Mesh: another agent has claimed the task."),
    # The action gate (docs/gate.md)
    ("BudgetExceeded", "budget_exceeded", 402, "Gate: the agent's budget is spent."),
    # Action contracts (docs/contracts.md)
    ("Unauthorized", "UNAUTHORIZED", 401, "Contracts: the agent key is not one of gate.agents."),
    ("IntentTooLong", "INTENT_TOO_LONG", 400, "Contracts: the intent is over its bound."),
    ("ContractNotFound", "CONTRACT_NOT_FOUND", 404, "Contracts: no such contract."),
    ("ContractExpired", "CONTRACT_EXPIRED", 410, "Contracts: the contract expired."),
    ("ContractAlreadyRedeemed", "CONTRACT_ALREADY_REDEEMED", 410, "Contracts: the contract was executed already."),
    ("ContractInvalid", "CONTRACT_INVALID", 422, "Contracts: the contract or its token is not valid."),
    ("ApprovalRequired", "APPROVAL_REQUIRED", 403, "Contracts: an admin must approve first."),
    ("RateLimitExceeded", "RATE_LIMIT_EXCEEDED", 429, "Contracts: over the key's rate."),
    ("ProviderUnavailable", "PROVIDER_UNAVAILABLE", 503, "Contracts: the provider did not answer."),
]

CODES = _classes(_TABLE)
globals().update({cls.__name__: cls for cls in CODES.values()})
__all__ += [cls.__name__ for cls in CODES.values()]


def error_class(code):
    """The exception class of an error code; APIError for an unknown one."""
    return CODES.get(code, APIError)


def from_answer(status, body):
    """The exception of a refusal: the class of its code."""
    err = body.get("error") if isinstance(body, dict) else None
    code = err.get("code", "") if isinstance(err, dict) else ""
    return error_class(code)(status, body)
