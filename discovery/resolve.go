package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Name is a parsed --join-dns NAME.
type Name struct {
	// Host is the name to look up.
	Host string
	// Port is the port given with the name (NAME:PORT); 0 when none was.
	Port int
	// SRV: Host is an SRV name (_service._proto.domain), whose records give the targets'
	// names and ports.
	SRV bool
}

// ParseName reads NAME, NAME:PORT or _service._proto.domain (an SRV name, which carries
// its own ports). The error says what is allowed.
func ParseName(s string) (Name, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Name{}, errors.New("empty name")
	}
	if strings.HasPrefix(s, "_") {
		if strings.Contains(s, ":") {
			return Name{}, errors.New("an SRV name (_service._proto.domain) gives its own ports: leave :PORT out")
		}
		return Name{Host: s, SRV: true}, nil
	}
	if !strings.Contains(s, ":") {
		return Name{Host: s}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Name{}, fmt.Errorf("want NAME, NAME:PORT or _service._proto.domain: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || host == "" {
		return Name{}, errors.New("want NAME, NAME:PORT (a port from 1 to 65535) or _service._proto.domain")
	}
	return Name{Host: host, Port: p}, nil
}

// Resolver looks up a Name's addresses.
type Resolver struct {
	name Name
	port int // for A and AAAA answers
	r    *net.Resolver
}

// NewResolver returns a resolver of name. A and AAAA answers get name's port, or
// defaultPort when name has none. server, when not empty, is the host:port of the DNS
// server to ask; empty: the system's resolver.
func NewResolver(name Name, defaultPort int, server string) (*Resolver, error) {
	port := name.Port
	if port == 0 {
		port = defaultPort
	}
	if !name.SRV && (port < 1 || port > 65535) {
		return nil, fmt.Errorf("join-dns %s: no port: write %s:PORT, or listen on a fixed port (not 0) that every member shares", name.Host, name.Host)
	}
	r := net.DefaultResolver
	if server != "" {
		if _, _, err := net.SplitHostPort(server); err != nil {
			return nil, fmt.Errorf("join-dns-server %q: want host:port, e.g. 10.96.0.10:53: %w", server, err)
		}
		r = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
	}
	return &Resolver{name: name, port: port, r: r}, nil
}

// Lookup returns the name's addresses as host:port, sorted, each once. A name that does
// not exist (yet) has none, without an error: a headless Service lists no pod before the
// first one has started.
func (r *Resolver) Lookup(ctx context.Context) ([]string, error) {
	var out []string
	add := func(ips []net.IPAddr, port int) {
		for _, ip := range ips {
			if ip.Zone == "" {
				out = append(out, net.JoinHostPort(ip.IP.String(), strconv.Itoa(port)))
			}
		}
	}
	if !r.name.SRV {
		ips, err := r.r.LookupIPAddr(ctx, r.name.Host)
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("resolve %s: %w", r.name.Host, err)
		}
		add(ips, r.port)
	} else {
		_, srvs, err := r.r.LookupSRV(ctx, "", "", r.name.Host)
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("resolve SRV %s: %w", r.name.Host, err)
		}
		var errs []error
		for _, s := range srvs {
			ips, err := r.r.LookupIPAddr(ctx, s.Target)
			if err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("resolve %s (SRV target of %s): %w", s.Target, r.name.Host, err))
			}
			add(ips, int(s.Port))
		}
		if len(out) == 0 && len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
