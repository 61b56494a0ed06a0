package kafka_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reqSpy is a kgo dialer (kafka.WithDialer) that watches the requests a
// client writes to the brokers and records every InitProducerId with the
// instant it was written and the producer id and epoch it carried (-1/-1: a
// fresh mint; anything else: a KIP-360 epoch recovery of that id and
// epoch). It reads the client's own bytes only and changes nothing.
type reqSpy struct {
	mu    sync.Mutex
	inits []spiedInit
}

type spiedInit struct {
	at         time.Time
	txnID      string
	producerID int64
	epoch      int16
}

func (s *reqSpy) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &spyConn{Conn: c, s: s}, nil
}

// initsSince returns the InitProducerId requests written at or after t.
func (s *reqSpy) initsSince(t time.Time) []spiedInit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []spiedInit
	for _, i := range s.inits {
		if !i.at.Before(t) {
			out = append(out, i)
		}
	}
	return out
}

func (s *reqSpy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inits)
}

// spyConn splits the written byte stream into request frames (int32 size,
// then the request header and body) and hands each whole frame to see.
type spyConn struct {
	net.Conn
	s   *reqSpy
	buf []byte
}

func (c *spyConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		n := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+n {
			break
		}
		c.see(c.buf[4 : 4+n])
		c.buf = c.buf[4+n:]
	}
	if len(c.buf) == 0 {
		c.buf = nil // do not keep a large backing array alive
	}
	return c.Conn.Write(p)
}

func (c *spyConn) see(frame []byte) {
	if len(frame) < 10 {
		return
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	if key != kmsg.InitProducerID.Int16() {
		return
	}
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	// Header v1/v2: api key, version, correlation id, client id (int16
	// length), then on flexible versions (InitProducerId v2+) tagged fields.
	off := 8
	idLen := int(int16(binary.BigEndian.Uint16(frame[off:])))
	off += 2
	if idLen > 0 {
		off += idLen
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	if req.IsFlexible() {
		if off >= len(frame) {
			return
		}
		// Tagged fields of the header: a count, then (tag, size, data).
		cnt, n := binary.Uvarint(frame[off:])
		off += n
		for i := uint64(0); i < cnt && off < len(frame); i++ {
			_, n1 := binary.Uvarint(frame[off:])
			off += n1
			sz, n2 := binary.Uvarint(frame[off:])
			off += n2 + int(sz)
		}
	}
	if off > len(frame) || req.ReadFrom(frame[off:]) != nil {
		return
	}
	in := spiedInit{at: time.Now(), producerID: req.ProducerID, epoch: req.ProducerEpoch}
	if req.TransactionalID != nil {
		in.txnID = *req.TransactionalID
	}
	c.s.mu.Lock()
	c.s.inits = append(c.s.inits, in)
	c.s.mu.Unlock()
}
