//go:build !linux

package bench

import (
	"context"
	"net"
)

// kernelStamps: only Linux gives sockets receive timestamps here; chunks
// are timed when read (client_timing method "user").
const kernelStamps = false

func dialStamped(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	return d.DialContext(ctx, network, addr)
}
