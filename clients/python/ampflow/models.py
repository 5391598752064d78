"""The API's answers as typed dicts: each is the decoded JSON, readable as
m["task_id"] or m.task_id. The fields are the OpenAPI document's schemas
(GET /v1/openapi.json) of the same name; a field the answer lacks reads as
None, a name that is no field raises AttributeError."""

__all__ = ["Model", "Message", "Inbox", "Acked", "Submitted", "TaskState", "Decision", "Lease", "Event",
           "AOFTask", "Identity", "Gate"]


class Model(dict):
    """A JSON object of the API: a dict whose keys read as attributes too."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            v = self[name]
        except KeyError:
            if any(name in getattr(c, "__annotations__", {}) for c in type(self).__mro__):
                return None
            raise AttributeError("%s has no field %r" % (type(self).__name__, name)) from None
        return Model(v) if type(v) is dict else v

    @classmethod
    def of(cls, v):
        """v as cls (a dict), or v itself (None, a list) when it is not a dict."""
        return cls(v) if isinstance(v, dict) else v


class Message(Model):
    """An AMP/1.0 message (Message): an inbox's item."""
    msg_id: str
    type: str
    task_id: str
    timestamp: str
    payload: dict


class Acked(Model):
    """Work this agent ACKed and has not answered (InboxResponse.acked)."""
    msg_id: str
    task_id: str
    by: str
    acked_at: str


class Inbox(Model):
    """GET /v1/inbox (InboxResponse): the role, its messages, with
    include="acked" what this agent holds, and the next page's cursor."""
    role: str
    messages: list
    acked: list
    next_cursor: str

    def __init__(self, v):
        super().__init__(v)
        self["messages"] = [Message(m) for m in self.get("messages") or []]
        self["acked"] = [Acked(a) for a in self.get("acked") or []]


class Submitted(Model):
    """The answer to a message, ACK or heartbeat (SubmitResponse): its
    msg_id and status, and warnings such as a diff_summary that does not
    match git."""
    msg_id: str
    status: str
    warnings: list


class TaskState(Model):
    """GET /v1/tasks/{id} (State)."""
    task_id: str
    status: str
    reason: str
    pending: dict


class Decision(Model):
    """A decision waiting for an admin (Decision)."""
    id: str
    kind: str
    digest: str
    options: list


class Lease(Model):
    """A mesh lease (Lease)."""
    lease_id: str
    resource_key: str
    agent_id: str
    state: str
    ttl_seconds: int
    expires_at: str


class Event(Model):
    """A mesh event (MeshEvent)."""
    id: str
    seq: int
    type: str
    severity: str
    payload: dict
    read_by: list
    created_at: str


class AOFTask(Model):
    """An AOF task (AOFTask): status, run, heartbeat, result, work log."""
    taskId: str
    title: str
    status: str
    assignee: str
    run: dict
    result: dict


class Identity(Model):
    """GET /v1/whoami: the token's name, id, role, and open when the API
    has no tokens (every caller an admin)."""
    name: str
    id: str
    role: str
    open: bool


class Gate(Model):
    """A gate's state (POST /v1/signals, GET /v1/gates/{id})."""
    gate_id: str
    status: str
