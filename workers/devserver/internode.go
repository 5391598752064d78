package devserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	"go.temporal.io/server/common/rpc/encryption"
)

// internodeTLS secures the server's own services to one another with a
// certificate made for this run and kept in memory only: history,
// matching, the worker service and the internal frontend each require it
// of callers, so a local process cannot reach them around the public
// frontend's key. The worker service's own client reaches the internal
// frontend with it, which grants it admin (the server's system workflows
// need that); the public frontend stays plain text and asks for the key.
type internodeTLS struct {
	server, client *tls.Config
}

var _ encryption.TLSConfigProvider = internodeTLS{}

// internodeName is the name the certificate is made out to and that
// clients verify.
const internodeName = "internode.ampflow.invalid"

func newInternodeTLS() (internodeTLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return internodeTLS{}, fmt.Errorf("making the internode key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: internodeName},
		DNSNames:              []string{internodeName},
		IPAddresses:           []net.IP{net.ParseIP(loopback)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(100 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return internodeTLS{}, fmt.Errorf("making the internode certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return internodeTLS{}, fmt.Errorf("making the internode certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	return internodeTLS{
		server: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
		client: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{pair},
			RootCAs:      pool,
			ServerName:   internodeName,
		},
	}, nil
}

func (t internodeTLS) GetInternodeServerConfig() (*tls.Config, error) { return t.server, nil }
func (t internodeTLS) GetInternodeClientConfig() (*tls.Config, error) { return t.client, nil }

// GetFrontendServerConfig is nil: the public frontend is plain text.
func (internodeTLS) GetFrontendServerConfig() (*tls.Config, error) { return nil, nil }
func (internodeTLS) GetFrontendClientConfig() (*tls.Config, error) { return nil, nil }
func (internodeTLS) GetRemoteClusterClientConfig(string) (*tls.Config, error) {
	return nil, nil
}
func (internodeTLS) GetExpiringCerts(time.Duration) (encryption.CertExpirationMap, encryption.CertExpirationMap, error) {
	return nil, nil, nil
}
