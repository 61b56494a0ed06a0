package kafka

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"os"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
)

// tlsConfig builds the TLS settings of SSL and SASL_SSL from the ssl.*
// properties (librdkafka's names): ssl.ca.location (the roots; empty: the
// system roots), ssl.certificate.location + ssl.key.location (+
// ssl.key.password) for mutual TLS. Every file problem is an
// ErrInvalidConfig naming the property, found here rather than at the first
// handshake; so is a client certificate outside its validity period.
func tlsConfig(cfg coord.Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.SSLCALocation != "" {
		pemBytes, err := os.ReadFile(cfg.SSLCALocation)
		if err != nil {
			return nil, coord.WrapError(coord.ErrInvalidConfig, err, "ssl.ca.location")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "ssl.ca.location=%q: no PEM certificate in the file", cfg.SSLCALocation)
		}
		tc.RootCAs = pool
	}
	if cfg.SSLCertificateLocation == "" {
		return tc, nil
	}
	certPEM, err := os.ReadFile(cfg.SSLCertificateLocation)
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "ssl.certificate.location")
	}
	keyPEM, err := os.ReadFile(cfg.SSLKeyLocation)
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "ssl.key.location")
	}
	keyDER, err := decodeKeyPEM(keyPEM, cfg.SSLKeyPassword)
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "ssl.key.location=%q: %v", cfg.SSLKeyLocation, err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(keyDER))
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "ssl.certificate.location=%q with ssl.key.location=%q", cfg.SSLCertificateLocation, cfg.SSLKeyLocation)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "ssl.certificate.location=%q", cfg.SSLCertificateLocation)
	}
	now := time.Now()
	if now.After(leaf.NotAfter) {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "ssl.certificate.location=%q: the client certificate %q expired at %s",
			cfg.SSLCertificateLocation, leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "ssl.certificate.location=%q: the client certificate %q is not valid before %s",
			cfg.SSLCertificateLocation, leaf.Subject.CommonName, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	tc.Certificates = []tls.Certificate{cert}
	return tc, nil
}

// decodeKeyPEM returns the private key block of keyPEM, decrypted with
// password when it is encrypted: PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2 with
// PBKDF2 and AES-CBC or DES-EDE3-CBC, what `openssl genpkey -aes256` and
// `openssl pkcs8 -topk8` write) or the legacy "Proc-Type: 4,ENCRYPTED"
// headers.
func decodeKeyPEM(keyPEM []byte, password string) (*pem.Block, error) {
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key in the file")
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the private key is encrypted: set ssl.key.password")
			}
			der, err := decryptPKCS8(b.Bytes, []byte(password))
			if err != nil {
				return nil, err
			}
			return &pem.Block{Type: "PRIVATE KEY", Bytes: der}, nil
		case x509.IsEncryptedPEMBlock(b): //nolint:staticcheck // legacy OpenSSL format, still written by tools
			if password == "" {
				return nil, errors.New("the private key is encrypted: set ssl.key.password")
			}
			der, err := x509.DecryptPEMBlock(b, []byte(password)) //nolint:staticcheck
			if err != nil {
				return nil, errors.New("wrong ssl.key.password (the key does not decrypt)")
			}
			return &pem.Block{Type: b.Type, Bytes: der}, nil
		case b.Type == "PRIVATE KEY" || b.Type == "RSA PRIVATE KEY" || b.Type == "EC PRIVATE KEY":
			return b, nil
		}
	}
}

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type pkcs8Encrypted struct {
	Algo struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue
	}
	Data []byte
}

type pbes2Params struct {
	KDF struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue
	}
	Cipher struct {
		Algorithm asn1.ObjectIdentifier
		IV        []byte
	}
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int `asn1:"optional"`
	PRF       struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue `asn1:"optional"`
	} `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo (RFC 5958, PBES2 of RFC
// 8018) and returns the PKCS#8 PrivateKeyInfo DER.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var enc pkcs8Encrypted
	if _, err := asn1.Unmarshal(der, &enc); err != nil {
		return nil, fmt.Errorf("encrypted private key: %v", err)
	}
	if !enc.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key: unsupported scheme %v (PBES2 only)", enc.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(enc.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBES2 parameters: %v", err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: unsupported key derivation %v (PBKDF2 only)", p.KDF.Algorithm)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kp); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 parameters: %v", err)
	}
	var prf func() hash.Hash
	switch a := kp.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
		prf = sha1.New
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted private key: unsupported PBKDF2 hash %v", a)
	}
	var keyLen int
	var newBlock func([]byte) (cipher.Block, error)
	switch a := p.Cipher.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case a.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case a.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case a.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted private key: unsupported cipher %v", a)
	}
	key, err := pbkdf2.Key(prf, string(password), kp.Salt, kp.Iter, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %v", err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(p.Cipher.IV) != bs || len(enc.Data) == 0 || len(enc.Data)%bs != 0 {
		return nil, errors.New("encrypted private key: malformed cipher text")
	}
	out := make([]byte, len(enc.Data))
	cipher.NewCBCDecrypter(block, p.Cipher.IV).CryptBlocks(out, enc.Data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || pad > len(out) {
		return nil, errors.New("wrong ssl.key.password (the key does not decrypt)")
	}
	for _, c := range out[len(out)-pad:] {
		if int(c) != pad {
			return nil, errors.New("wrong ssl.key.password (the key does not decrypt)")
		}
	}
	out = out[:len(out)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(out); err != nil {
		return nil, errors.New("wrong ssl.key.password (the key does not decrypt)")
	}
	return out, nil
}
