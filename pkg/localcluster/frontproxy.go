package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// frontProxyUser is the name the API server's aggregation layer presents
// (in its client certificate) when it forwards a request to an extension
// API server, such as fluence's inspection API.
const frontProxyUser = "front-proxy-client"

// configureFrontProxy gives the aggregation layer a client certificate
// signed by a CA of its own and tells the API server (and, through the
// extension-apiserver-authentication ConfigMap, every extension server)
// to trust the X-Remote-* headers only from that certificate. Without it
// the aggregation layer would forward requests without the caller's
// identity.
func configureFrontProxy(s *options.ServerRunOptions, pki string) error {
	caCert, caKey, err := newCA("fluence-local-front-proxy-ca")
	if err != nil {
		return err
	}
	caDER := caCert.Raw
	now := time.Now()
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: frontProxyUser},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caCert, clientKey.Public(), caKey)
	if err != nil {
		return err
	}

	caFile := filepath.Join(pki, "front-proxy-ca.crt")
	certFile := filepath.Join(pki, "front-proxy-client.crt")
	keyFile := filepath.Join(pki, "front-proxy-client.key")
	if err := writePEM(caFile, "CERTIFICATE", caDER); err != nil {
		return err
	}
	if err := writePEM(certFile, "CERTIFICATE", clientDER); err != nil {
		return err
	}
	if err := writeKey(keyFile, clientKey); err != nil {
		return err
	}
	rh := s.Authentication.RequestHeader
	rh.ClientCAFile = caFile
	rh.AllowedNames = []string{frontProxyUser}
	rh.UsernameHeaders = []string{"X-Remote-User"}
	rh.UIDHeaders = []string{"X-Remote-Uid"}
	rh.GroupHeaders = []string{"X-Remote-Group"}
	rh.ExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	s.ProxyClientCertFile = certFile
	s.ProxyClientKeyFile = keyFile
	return nil
}

// configureClientCA makes the API server accept client certificates
// signed by a CA of its own. The CA is also published in the
// extension-apiserver-authentication ConfigMap, where servers with
// delegated authentication (kube-scheduler's secure port) expect one and
// log an error for every request without it. Nothing here signs client
// certificates with it yet; the key is not kept.
func configureClientCA(s *options.ServerRunOptions, pki string) error {
	ca, _, err := newCA("fluence-local-client-ca")
	if err != nil {
		return err
	}
	der := ca.Raw
	file := filepath.Join(pki, "client-ca.crt")
	if err := writePEM(file, "CERTIFICATE", der); err != nil {
		return err
	}
	s.Authentication.ClientCert.ClientCA = file
	return nil
}

// newCA makes a self-signed CA certificate valid for ten years.
func newCA(commonName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}
