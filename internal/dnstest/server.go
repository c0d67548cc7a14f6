// Package dnstest is an in-process DNS server for tests of DNS discovery: it answers A,
// AAAA and SRV questions from records a test sets and changes while it runs, on a random
// loopback port (UDP and TCP, as a resolver may use either).
package dnstest

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Server is a running DNS server. Its methods are safe for concurrent use.
type Server struct {
	addr string

	mu    sync.Mutex
	hosts map[string][]net.IP  // fully qualified name → addresses
	srvs  map[string][]dns.SRV // fully qualified name → records
	asked map[string]int       // fully qualified name → questions answered
}

// Start starts a server, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{hosts: map[string][]net.IP{}, srvs: map[string][]dns.SRV{}, asked: map[string]int{}}
	var lastErr error
	for range 10 { // the TCP port of the same number may be taken: try another
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			lastErr = err
			continue
		}
		s.addr = pc.LocalAddr().String()
		udp := &dns.Server{PacketConn: pc, Handler: s}
		tcp := &dns.Server{Listener: ln, Handler: s}
		started := make(chan struct{}, 2)
		udp.NotifyStartedFunc = func() { started <- struct{}{} }
		tcp.NotifyStartedFunc = func() { started <- struct{}{} }
		go func() { _ = udp.ActivateAndServe() }()
		go func() { _ = tcp.ActivateAndServe() }()
		<-started
		<-started
		t.Cleanup(func() {
			_ = udp.Shutdown()
			_ = tcp.Shutdown()
		})
		return s
	}
	t.Fatalf("dnstest: no port free for both UDP and TCP: %v", lastErr)
	return nil
}

// Addr is the server's host:port (for sharddaemon --set join-dns-server=ADDR).
func (s *Server) Addr() string { return s.addr }

// SetHost makes name answer with ips (A records for IPv4, AAAA for IPv6); none: the name
// does not exist.
func (s *Server) SetHost(name string, ips ...net.IP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[dns.Fqdn(name)] = ips
}

// SetSRV makes name answer with one SRV record per target, given as host:port.
func (s *Server) SetSRV(name string, targets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rrs []dns.SRV
	for _, t := range targets {
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			panic("dnstest: SRV target " + t + ": " + err.Error())
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			panic("dnstest: SRV target " + t + ": " + err.Error())
		}
		rrs = append(rrs, dns.SRV{Priority: 0, Weight: 10, Port: uint16(p), Target: dns.Fqdn(host)})
	}
	s.srvs[dns.Fqdn(name)] = rrs
}

// Asked reports how many questions about name the server has answered.
func (s *Server) Asked(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[dns.Fqdn(name)]
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.Authoritative = true
	s.mu.Lock()
	for _, q := range req.Question {
		name := strings.ToLower(q.Name)
		s.asked[name]++
		_, isHost := s.hosts[name]
		_, isSRV := s.srvs[name]
		if !isHost && !isSRV {
			resp.Rcode = dns.RcodeNameError
			continue
		}
		hdr := func(t uint16) dns.RR_Header {
			return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: 0}
		}
		switch q.Qtype {
		case dns.TypeA, dns.TypeAAAA:
			for _, ip := range s.hosts[name] {
				if v4 := ip.To4(); v4 != nil && q.Qtype == dns.TypeA {
					resp.Answer = append(resp.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: v4})
				} else if v4 == nil && q.Qtype == dns.TypeAAAA {
					resp.Answer = append(resp.Answer, &dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: ip})
				}
			}
		case dns.TypeSRV:
			for _, r := range s.srvs[name] {
				rr := r
				rr.Hdr = hdr(dns.TypeSRV)
				resp.Answer = append(resp.Answer, &rr)
			}
		}
	}
	s.mu.Unlock()
	_ = w.WriteMsg(resp)
}
