//go:build !linux

package bench

import (
	"context"
	"net"
)

// dialStamped dials a plain connection: receive timestamps are read on
// Linux only, so chunks are timed when read (client_timing method "user").
func dialStamped(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &writeConn{Conn: c}, nil
}
