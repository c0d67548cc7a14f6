package p2p

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
)

const echoProto = protocol.ID("/shardmesh/test-echo/1")

// TestStreamRequestResponse: one stream per call; the server answers each request, the
// client half-closes, the server sees io.EOF and closes.
func TestStreamRequestResponse(t *testing.T) {
	server := newHost(t, nil)
	client := newHost(t, nil)
	served := make(chan error, 1)
	server.HandleStream(echoProto, func(s *Stream) {
		served <- func() error {
			if s.RemotePeer() != client.ID() || s.Protocol() != echoProto {
				return fmt.Errorf("stream from %s on %s", s.RemotePeer(), s.Protocol())
			}
			for {
				req, err := s.ReadFrame()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				if err := s.WriteFrame(append([]byte("echo "), req...)); err != nil {
					return err
				}
			}
		}()
	})
	connect(t, client, server)
	s, err := client.OpenStream(testContext(t), server.ID(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var kept [][]byte
	for i := range 3 {
		if err := s.WriteFrame(fmt.Appendf(nil, "req %d", i)); err != nil {
			t.Fatal(err)
		}
		resp, err := s.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, resp)
	}
	for i, resp := range kept { // ReadFrame's result is the caller's to keep
		if want := fmt.Sprintf("echo req %d", i); string(resp) != want {
			t.Fatalf("response %d: %q, want %q", i, resp, want)
		}
	}
	big := bytes.Repeat([]byte("0123456789"), 20000) // far larger than the read buffer
	if err := s.WriteFrame(big); err != nil {
		t.Fatal(err)
	}
	if resp, err := s.ReadFrame(); err != nil || !bytes.Equal(resp, append([]byte("echo "), big...)) {
		t.Fatalf("big frame: %d bytes, %v", len(resp), err)
	}
	if err := s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadFrame(); err != io.EOF {
		t.Fatalf("after the server returned: got %v, want io.EOF", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestStreamServerPush: a watch-style stream, the server writes a series then closes.
func TestStreamServerPush(t *testing.T) {
	server := newHost(t, nil)
	client := newHost(t, nil)
	server.HandleStream(echoProto, func(s *Stream) {
		for i := range 100 {
			if err := s.WriteFrame(binary.AppendUvarint(nil, uint64(i))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	connect(t, client, server)
	s, err := client.OpenStream(testContext(t), server.ID(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for i := range 100 {
		frame, err := s.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if v, _ := binary.Uvarint(frame); v != uint64(i) {
			t.Fatalf("frame %d holds %d", i, v)
		}
	}
	if _, err := s.ReadFrame(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
}

func TestStreamFrameLimits(t *testing.T) {
	server := newHost(t, func(c *Config) { c.MaxFrameSize = 100 })
	client := newHost(t, nil)
	result := make(chan error, 1)
	server.HandleStream(echoProto, func(s *Stream) {
		_, err := s.ReadFrame()
		result <- err
	})
	connect(t, client, server)
	s, err := client.OpenStream(testContext(t), server.ID(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Reset() }()
	if err := s.WriteFrame(make([]byte, 101)); err != nil { // the client's limit is 4 MiB
		t.Fatal(err)
	}
	if err := <-result; !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("server read: got %v, want ErrFrameTooLarge", err)
	}
	if _, err := s.ReadFrame(); err == nil || err == io.EOF {
		t.Fatalf("client read after the server's reset: got %v, want a reset error", err)
	}
	if st := server.Stats(); st.OversizedFrames != 1 || st.StreamsReset != 1 {
		t.Fatalf("server stats %+v", st)
	}
	big := make([]byte, client.cfg.MaxFrameSize+1)
	if err := s.WriteFrame(big); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("WriteFrame over our limit: got %v, want ErrFrameTooLarge", err)
	}
}

func TestOpenStreamUnsupportedProtocol(t *testing.T) {
	server := newHost(t, nil)
	client := newHost(t, nil)
	connect(t, client, server)
	s, err := client.OpenStream(testContext(t), server.ID(), "/shardmesh/nobody-serves-this/1")
	if err == nil {
		// Negotiation may be lazy: the failure then shows on first use.
		_ = s.WriteFrame([]byte("x"))
		_, err = s.ReadFrame()
	}
	if err == nil || err == io.EOF {
		t.Fatalf("got %v, want a protocol negotiation error", err)
	}
}

// TestStreamReadDeadline: a read that times out leaves the stream usable.
func TestStreamReadDeadline(t *testing.T) {
	server := newHost(t, nil)
	client := newHost(t, nil)
	send := make(chan struct{})
	server.HandleStream(echoProto, func(s *Stream) {
		<-send
		if err := s.WriteFrame([]byte("late")); err != nil {
			t.Error(err)
		}
	})
	connect(t, client, server)
	s, err := client.OpenStream(testContext(t), server.ID(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.WriteFrame([]byte("hello")); err != nil { // the server sees the stream
		t.Fatal(err)
	}
	if err := s.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var timeout interface{ Timeout() bool }
	if _, err := s.ReadFrame(); !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("got %v, want a timeout", err)
	}
	close(send)
	if err := s.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	frame, err := s.ReadFrame()
	if err != nil || string(frame) != "late" {
		t.Fatalf("after the timeout: %q, %v", frame, err)
	}
	if st := client.Stats(); st.StreamsReset != 0 {
		t.Fatalf("client reset a stream: %+v", st)
	}
}
