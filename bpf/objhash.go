package bpf

import (
	"crypto/sha256"
	"encoding/hex"
)

// ObjectsHash is a short SHA-256 over the embedded BPF objects (port,
// impairer, TDMA gate), so that a build says which programs it loads.
func ObjectsHash() string {
	h := sha256.New()
	for _, b := range [][]byte{_PortBytes, _ImpairerBytes, _TdmagateBytes} {
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
