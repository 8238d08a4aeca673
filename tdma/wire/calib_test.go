package wire

import (
	"bytes"
	"testing"
)

func TestEchoCalibRoundTrip(t *testing.T) {
	e := Echo{Reply: true, Seq: 7, FMSend: 123456789, HostRx: 5, HostTx: 9}
	b := make([]byte, EchoLen)
	if _, err := e.Encode(b); err != nil {
		t.Fatal(err)
	}
	var got Echo
	if err := DecodeEcho(b, &got); err != nil || got != e {
		t.Fatalf("echo: %v %+v", err, got)
	}
	c := Calib{DelayEst: 42_000}
	cb := make([]byte, CalibMsgLen)
	if _, err := c.Encode(cb); err != nil {
		t.Fatal(err)
	}
	var gc Calib
	if err := DecodeCalib(cb, &gc); err != nil || gc != c {
		t.Fatalf("calib: %v %+v", err, gc)
	}
	if err := DecodeCalib(b, &gc); err == nil {
		t.Error("an echo decoded as a calib")
	}
}

// FuzzEcho: DecodeEcho never panics; what it accepts re-encodes the same.
func FuzzEcho(f *testing.F) {
	b := make([]byte, EchoLen)
	(&Echo{Seq: 3, FMSend: 99}).Encode(b)
	f.Add(bytes.Clone(b))
	f.Fuzz(func(t *testing.T, in []byte) {
		var e Echo
		if DecodeEcho(in, &e) != nil {
			return
		}
		out := make([]byte, EchoLen)
		e.Encode(out)
		var again Echo
		if err := DecodeEcho(out, &again); err != nil || again != e {
			t.Fatalf("%v %+v %+v", err, again, e)
		}
	})
}

// FuzzCalib: DecodeCalib never panics; what it accepts re-encodes the same.
func FuzzCalib(f *testing.F) {
	b := make([]byte, CalibMsgLen)
	(&Calib{DelayEst: 50_000}).Encode(b)
	f.Add(bytes.Clone(b))
	f.Fuzz(func(t *testing.T, in []byte) {
		var c Calib
		if DecodeCalib(in, &c) != nil {
			return
		}
		out := make([]byte, CalibMsgLen)
		if _, err := c.Encode(out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in[:CalibMsgLen]) {
			t.Fatalf("%x != %x", out, in[:CalibMsgLen])
		}
	})
}
