package devserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"go.temporal.io/server/common/authorization"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// authHeader is the gRPC metadata the frontend reads credentials from, and
// the one the SDK's API-key credentials write.
const authHeader = "authorization"

// keyClaims grants the system admin role to a caller that presents the key
// as `authorization: Bearer <key>`, and no role to any other, so that the
// default authorizer refuses it everything but the health checks. Without
// TLS this guards against other local users and processes only: anyone who
// can read the key, or the traffic, is admin.
type keyClaims struct{ key []byte }

func (m keyClaims) GetClaims(ai *authorization.AuthInfo) (*authorization.Claims, error) {
	got, ok := strings.CutPrefix(ai.AuthToken, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), m.key) != 1 {
		// No claims and no error: the authorizer denies with a plain
		// PermissionDenied, and nothing is logged per refused call.
		return nil, nil
	}
	return &authorization.Claims{Subject: "ampflow", System: authorization.RoleAdmin}, nil
}

// newAPIKey is a random key for a server started without one.
func newAPIKey() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("making an API key: %w", err)
	}
	return hex.EncodeToString(raw), nil
}

// withKey is a gRPC dial option that presents key on every unary call.
func withKey(key string) grpc.DialOption {
	return grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx = metadata.AppendToOutgoingContext(ctx, authHeader, "Bearer "+key)
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

// dialFrontend connects to the frontend in plain text, presenting key.
func dialFrontend(addr, key string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), withKey(key)}, opts...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to frontend %s: %w", addr, err)
	}
	return conn, nil
}
