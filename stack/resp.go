package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// RESP2 spoken by hand, for one command per connection: the package comment
// says why this stays rather than go-redis.

// respCallTimeout bounds one request, whatever ctx allows, so that a frozen
// server fails one poll instead of stalling it.
const respCallTimeout = time.Second

// maxBulk guards against a corrupt length making us allocate without bound.
const maxBulk = 64 << 20

// respError is an error reply ("-ERR …", "-LOADING …") from the server.
type respError string

func (e respError) Error() string { return "redis: " + string(e) }

// do sends one command on a fresh connection to addr and returns the reply:
// string for simple and bulk strings, int64 for integers, []any for arrays,
// nil for null replies, and a respError for an error reply.
func do(ctx context.Context, addr string, args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, respCallTimeout) // or ctx's deadline, if sooner
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)

	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, fmt.Errorf("%s %s: %w", addr, args[0], err)
	}
	reply, err := readReply(bufio.NewReader(conn))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", addr, args[0], err)
	}
	return reply, nil
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer reply %q", line)
		}
		return n, nil
	case '$', '*': // a bulk string's or an array's length, -1 for null
		n, err := strconv.Atoi(body)
		switch {
		case err != nil || n > maxBulk:
			return nil, fmt.Errorf("bad length %q", line)
		case n < 0:
			return nil, nil
		case line[0] == '$':
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return string(buf[:n]), nil
		}
		arr := make([]any, n)
		for i := range arr {
			if arr[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return arr, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", line)
}

// doString runs a command whose reply is a string (PING, INFO).
func doString(ctx context.Context, addr string, args ...string) (string, error) {
	reply, err := do(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := reply.(string)
	if !ok {
		return "", fmt.Errorf("%s %s: reply %T, want string", addr, args[0], reply)
	}
	return s, nil
}

// infoFields parses an INFO reply into its key:value fields.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// pairs turns a flat [k1, v1, k2, v2, …] array reply, as SENTINEL MASTER and
// SENTINEL REPLICAS give in RESP2, into a map.
func pairs(reply any) (map[string]string, error) {
	arr, ok := reply.([]any)
	if !ok || len(arr)%2 != 0 {
		return nil, fmt.Errorf("reply %T, want a flat array of pairs", reply)
	}
	m := make(map[string]string, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		k, _ := arr[i].(string)
		v, _ := arr[i+1].(string)
		m[k] = v
	}
	return m, nil
}
