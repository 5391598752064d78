"""Backoff for the loops: per item (a message, task or event that failed)
and for the loop itself (the API out of reach)."""

import time


class Backoff:
    """Doubling delays from `base` to `cap` seconds, kept per key."""

    def __init__(self, base=1.0, cap=60.0, clock=time.monotonic):
        self.base, self.cap, self.clock = base, cap, clock
        self._fails = {}  # key -> (count, due)

    def failed(self, key):
        """Records a failure of key; returns the delay before its next try."""
        n = self._fails.get(key, (0, 0))[0] + 1
        delay = min(self.base * 2 ** (n - 1), self.cap)
        self._fails[key] = (n, self.clock() + delay)
        return delay

    def ok(self, key):
        self._fails.pop(key, None)

    def waiting(self, key):
        """True while key's delay runs."""
        f = self._fails.get(key)
        return f is not None and f[1] > self.clock()

    def until_due(self, keys):
        """Seconds until the first of keys may be tried again (0: now)."""
        dues = [self._fails[k][1] for k in keys if k in self._fails]
        return max(0.0, min(dues) - self.clock()) if dues else 0.0


def transient(err):
    """True for a failure that may pass: no answer, or a 5xx or 429."""
    status = getattr(err, "status", None)
    if status is None:
        return isinstance(err, OSError)
    return status >= 500 or status == 429
