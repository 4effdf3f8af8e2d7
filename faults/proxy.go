package main

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxyMode is what a proxy does with the bytes between one petstore and
// one etcd member.
type proxyMode int32

const (
	// modePass forwards both ways.
	modePass proxyMode = iota
	// modeRefuse closes every connection and refuses new ones: a partition
	// that the client learns of at once.
	modeRefuse
	// modeBlackhole accepts connections and holds them, forwarding nothing:
	// a partition that the client learns of only by its own deadlines.
	modeBlackhole
	// modeLoseAnswers forwards requests to etcd but drops every byte etcd
	// sends back, except on watch connections: writes are applied and
	// their answers lost, while the watch still tells what was committed.
	modeLoseAnswers
)

func (m proxyMode) String() string {
	switch m {
	case modePass:
		return "pass"
	case modeRefuse:
		return "refuse"
	case modeBlackhole:
		return "blackhole"
	case modeLoseAnswers:
		return "lose-answers"
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

// proxy is the TCP path from one petstore (inst) to one etcd member. It
// tells watch connections from unary ones by their first request line:
// petstore's etcd client keeps them on separate connections.
type proxy struct {
	inst, member int
	target       string // the member's client address
	addr         string // what the petstore dials
	mode         atomic.Int32
	dropped      atomic.Int64 // bytes not forwarded

	mu    sync.Mutex
	ln    net.Listener
	conns map[*proxyConn]struct{}
	done  bool
}

// proxyConn is one proxied connection.
type proxyConn struct {
	client, server net.Conn
	watch          atomic.Bool
	kindKnown      chan struct{} // closed once the first request line was read
	closed         chan struct{}
	tainted        atomic.Bool // bytes were dropped: its HTTP stream is broken
	once           sync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		close(c.closed)
		c.client.Close()
		c.server.Close()
	})
}

func newProxy(inst, member int, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{inst: inst, member: member, target: target, addr: ln.Addr().String(),
		ln: ln, conns: map[*proxyConn]struct{}{}}
	go p.accept(ln)
	return p, nil
}

func (p *proxy) currentMode() proxyMode { return proxyMode(p.mode.Load()) }

// accept serves ln until it is closed (refuse mode, or the end).
func (p *proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(client net.Conn) {
	if p.currentMode() == modeRefuse {
		client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		// The member is down: the petstore sees what it would see
		// without the proxy, a connection closed on it.
		client.Close()
		return
	}
	c := &proxyConn{client: client, server: server, kindKnown: make(chan struct{}), closed: make(chan struct{})}
	p.mu.Lock()
	// Checked again under the lock: a switch to refuse made since the
	// check above has closed every connection it could see.
	if p.done || p.currentMode() == modeRefuse {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	go p.upstream(c)
	p.downstream(c)
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// upstream copies petstore's requests to etcd, reading the first request
// line to learn whether the connection carries a watch.
func (p *proxy) upstream(c *proxyConn) {
	defer c.close()
	buf := make([]byte, 32<<10)
	var head []byte
	known := false
	for {
		n, err := c.client.Read(buf)
		chunk := buf[:n]
		if n > 0 && !known {
			head = append(head, chunk...)
			if bytes.IndexByte(head, '\n') < 0 && len(head) < 4096 && err == nil {
				continue
			}
			c.watch.Store(bytes.HasPrefix(head, []byte("POST /v3/watch ")))
			known = true
			close(c.kindKnown)
			chunk = head
		}
		if len(chunk) > 0 {
			if p.currentMode() == modeBlackhole {
				c.tainted.Store(true)
				p.dropped.Add(int64(len(chunk)))
			} else if _, werr := c.server.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// downstream copies etcd's answers back, unless the mode drops them.
func (p *proxy) downstream(c *proxyConn) {
	defer c.close()
	select {
	case <-c.kindKnown:
	case <-c.closed:
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			m := p.currentMode()
			if m == modeBlackhole || (m == modeLoseAnswers && !c.watch.Load()) {
				c.tainted.Store(true)
				p.dropped.Add(int64(n))
			} else if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// setMode switches the proxy to m. Refuse closes the listener and every
// connection; leaving refuse listens again on the same address. Leaving a
// mode that dropped bytes closes the connections that lost some: their
// HTTP framing is broken, and the client would otherwise wait on them.
func (p *proxy) setMode(m proxyMode) error {
	old := proxyMode(p.mode.Swap(int32(m)))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil
	}
	if m == modeRefuse {
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		for c := range p.conns {
			c.close()
		}
		return nil
	}
	if old == modeRefuse && p.ln == nil {
		ln, err := listenAgain(p.addr)
		if err != nil {
			return fmt.Errorf("proxy %d→%d: listening again on %s: %w", p.inst, p.member, p.addr, err)
		}
		p.ln = ln
		go p.accept(ln)
	}
	if m == modePass {
		for c := range p.conns {
			if c.tainted.Load() {
				c.close()
			}
		}
	}
	return nil
}

// listenAgain binds addr again, retrying for a few seconds: the port was
// ours a moment ago, but connections to it may linger.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// watches returns how many open connections carry a watch.
func (p *proxy) watches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if c.watch.Load() {
			n++
		}
	}
	return n
}

// close stops the proxy for good.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.close()
	}
}
