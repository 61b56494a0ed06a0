package main

// run's write channel: a Unix socket (path in KRABKA_WRITE) on which the
// child sends one record per line and gets one answer line per record,
// in order. Every record goes through the leadership's guarded write
// (coord.Leadership.Produce), so the broker refuses it once another holder
// took over; after the leadership ended, the answer is the error it ended
// with (ERR FENCED ...). The socket lives as long as the child: it is
// closed, and its directory removed, when the child is dead.
//
// Lines that arrive together (already read, up to maxBatch lines or
// maxBatchBytes) go out as one Produce call: one transaction whose outcome
// answers each of them.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
)

const (
	maxLine       = 1 << 20 // longest line (record) accepted, bytes without the newline
	maxBatch      = 256
	maxBatchBytes = 512 << 10
)

type writeChannel struct {
	dir, path string
	ln        *net.UnixListener
	l         *coord.Leadership
	topic     string
	partition int32
	keySep    []byte
	timeout   time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func openWriteChannel(l *coord.Leadership, topic string, partition int32, keySep string, timeout time.Duration) (*writeChannel, error) {
	dir, err := os.MkdirTemp("", "krabka-run-") // mode 0700: only this user reaches the socket
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "write.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	w := &writeChannel{dir: dir, path: path, ln: ln, l: l, topic: topic, partition: partition,
		timeout: timeout, conns: map[net.Conn]struct{}{}}
	if keySep != "" {
		w.keySep = []byte(keySep)
	}
	w.wg.Add(1)
	go w.accept()
	return w, nil
}

func (w *writeChannel) accept() {
	defer w.wg.Done()
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			c.Close()
			return
		}
		w.conns[c] = struct{}{}
		w.wg.Add(1)
		w.mu.Unlock()
		go w.serve(c)
	}
}

// close stops accepting, closes every connection and removes the socket.
// Idempotent.
func (w *writeChannel) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.ln.Close()
	for c := range w.conns {
		c.Close()
	}
	w.mu.Unlock()
	w.wg.Wait()
	os.RemoveAll(w.dir)
}

// serve answers one connection's lines in order.
func (w *writeChannel) serve(c net.Conn) {
	defer func() {
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
		c.Close()
		w.wg.Done()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	out := bufio.NewWriter(c)
	for {
		// One batch: the first line (blocking), then the lines already read.
		var batch [][]byte
		var answers []string // per line: "" = to be produced, else the ERR answer
		size := 0
		for len(batch) < maxBatch && size < maxBatchBytes {
			if len(batch) > 0 && !hasLine(r) {
				break
			}
			line, tooLong, err := readLine(r)
			if line == nil && !tooLong {
				if len(batch) > 0 {
					break
				}
				_ = err
				out.Flush()
				return
			}
			if tooLong {
				batch = append(batch, nil)
				answers = append(answers, fmt.Sprintf("ERR INVALID_ARG line longer than %d bytes: not written", maxLine))
				continue
			}
			batch = append(batch, line)
			answers = append(answers, "")
			size += len(line)
			if err != nil { // the last line, without its newline
				break
			}
		}
		if len(batch) == 0 {
			out.Flush()
			return
		}
		w.produce(batch, answers)
		for _, a := range answers {
			out.WriteString(a)
			out.WriteByte('\n')
		}
		if err := out.Flush(); err != nil {
			return
		}
	}
}

// hasLine reports whether a whole line is already buffered.
func hasLine(r *bufio.Reader) bool {
	n := r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// readLine reads one line without its newline. A line longer than maxLine
// is consumed and reported tooLong. At the end of the stream a last line
// without a newline is returned with the error; nil, false, err when
// nothing is left.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLine+1 {
			tooLong = true
			buf = nil
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, true, nil
			}
			return buf[:len(buf)-1], false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			if tooLong {
				return nil, true, err
			}
			if len(buf) == 0 {
				return nil, false, err
			}
			return buf, false, err
		}
	}
}

// produce writes the lines whose answer is still empty, in one guarded
// write, and fills in their answers.
func (w *writeChannel) produce(batch [][]byte, answers []string) {
	var msgs []coord.Message
	var idx []int
	for i, line := range batch {
		if answers[i] != "" {
			continue
		}
		m := coord.Message{Topic: w.topic, Partition: w.partition, Value: line}
		if w.keySep != nil {
			if k, v, ok := bytes.Cut(line, w.keySep); ok {
				m.Key, m.Value = k, v
			}
		}
		if m.Value == nil {
			m.Value = []byte{} // an empty line is an empty value, not a tombstone
		}
		msgs = append(msgs, m)
		idx = append(idx, i)
	}
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	res, err := w.l.Produce(ctx, msgs...)
	cancel()
	if err == nil && len(res) != len(msgs) {
		err = fmt.Errorf("%d results for %d records", len(res), len(msgs))
	}
	if err != nil {
		a := "ERR " + errCode(err) + " " + oneLine(err.Error())
		for _, i := range idx {
			answers[i] = a
		}
		return
	}
	tok, deadline := w.l.Token(), w.l.Lease().Deadline
	for j, i := range idx {
		answers[i] = fmt.Sprintf("OK %d %d %s %d", res[j].Partition, res[j].Offset, tok, deadline)
	}
}

// errCode names err as the library's error table does (FENCED,
// LEASE_EXPIRED, NOT_LEADER, TIMEOUT, ...).
func errCode(err error) string {
	for _, row := range coord.ErrorTable {
		if row.Sentinel != nil && errors.Is(err, row.Sentinel) {
			return row.Name
		}
	}
	return "INTERNAL"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
