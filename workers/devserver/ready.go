package devserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// poll calls try until it reports done, ctx ends, or it fails for good.
// The pause between tries grows from a few milliseconds, because the
// server is usually ready within moments of Start.
func poll(ctx context.Context, try func(context.Context) (done bool, err error)) error {
	wait := 5 * time.Millisecond
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		done, err := try(attempt)
		cancel()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// waitForNamespace returns once the frontend describes namespace, which
// needs the frontend listening, persistence open and the namespace loaded.
func waitForNamespace(ctx context.Context, conn *grpc.ClientConn, namespace string) error {
	wf := workflowservice.NewWorkflowServiceClient(conn)
	var lastErr error
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		_, lastErr = wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return lastErr == nil, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("%w (last answer: %v)", err, lastErr)
	}
	return err
}

// ensureSearchAttributes adds the attributes the namespace lacks, refuses
// one registered with another type, and waits until the frontend accepts
// the added ones in queries: it learns of them through a namespace cache
// that refreshes on its own schedule.
func ensureSearchAttributes(ctx context.Context, conn *grpc.ClientConn, namespace string, want map[string]enums.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	op := operatorservice.NewOperatorServiceClient(conn)
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes of %s: %w", namespace, err)
	}
	missing := map[string]enums.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		typ, ok := have.GetCustomAttributes()[name]
		if !ok {
			if _, system := have.GetSystemAttributes()[name]; system {
				return fmt.Errorf("search attribute %s of %s: the name is taken by a system attribute", name, namespace)
			}
			missing[name] = want[name]
			continue
		}
		if typ != want[name] {
			return fmt.Errorf("search attribute %s of %s is registered as %s, not %s", name, namespace, typ, want[name])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("adding search attributes %v to %s: %w", slices.Sorted(maps.Keys(missing)), namespace, err)
	}

	wf := workflowservice.NewWorkflowServiceClient(conn)
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		query := fmt.Sprintf("%s = %s", name, zeroLiteral(missing[name]))
		var lastErr error
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			_, lastErr = wf.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
			if lastErr != nil && status.Code(lastErr) != codes.InvalidArgument {
				return false, fmt.Errorf("querying %s by search attribute %s: %w", namespace, name, lastErr)
			}
			return lastErr == nil, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for search attribute %s of %s: %w (last answer: %v)", name, namespace, err, lastErr)
		}
	}
	return nil
}

// zeroLiteral is a visibility query literal of type t.
func zeroLiteral(t enums.IndexedValueType) string {
	switch t {
	case enums.INDEXED_VALUE_TYPE_INT, enums.INDEXED_VALUE_TYPE_DOUBLE:
		return "0"
	case enums.INDEXED_VALUE_TYPE_BOOL:
		return "false"
	case enums.INDEXED_VALUE_TYPE_DATETIME:
		return "'2000-01-01T00:00:00Z'"
	default:
		return "''"
	}
}

// registerNamespace registers namespace unless the frontend knows it
// already, retrying while the frontend is not yet serving.
func registerNamespace(ctx context.Context, conn *grpc.ClientConn, namespace string, retention time.Duration) error {
	wf := workflowservice.NewWorkflowServiceClient(conn)
	var lastErr error
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		_, lastErr = wf.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		switch status.Code(lastErr) {
		case codes.OK, codes.AlreadyExists:
			return true, nil
		case codes.InvalidArgument, codes.PermissionDenied:
			return false, fmt.Errorf("registering namespace %s: %w", namespace, lastErr)
		}
		return false, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("registering namespace %s: %w (last answer: %v)", namespace, err, lastErr)
	}
	return err
}
