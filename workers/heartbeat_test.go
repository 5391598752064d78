package workers

import (
	"testing"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/workflows"
)

// TestDeliverHeartbeats: a runner delivery heartbeats at least three
// times within the Deliver activity's heartbeat timeout, and that timeout
// lets another worker take a dead worker's run within 30 s.
func TestDeliverHeartbeats(t *testing.T) {
	if 3*delivery.AliveEvery > workflows.DeliverHeartbeatTimeout {
		t.Errorf("a runner delivery beats every %s: fewer than three beats in the %s heartbeat timeout", delivery.AliveEvery, workflows.DeliverHeartbeatTimeout)
	}
	if o := workflows.DeliverOptions(); o.HeartbeatTimeout != workflows.DeliverHeartbeatTimeout || o.HeartbeatTimeout+o.RetryPolicy.InitialInterval > 30e9 {
		t.Errorf("Deliver's heartbeat timeout %s and first retry after %s: a dead worker's run is taken later than 30 s", o.HeartbeatTimeout, o.RetryPolicy.InitialInterval)
	}
}
