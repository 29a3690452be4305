// Package remoting speaks RocketMQ's remoting protocol: the framed request/response
// exchange that clients, brokers and name servers use over TCP.
//
// # Frame
//
// Every message on the wire is one frame:
//
//	+--------+---------------------------+--------+------+
//	| length | serialize type | hdr len  | header | body |
//	| 4 B    | 1 B            | 3 B      |        |      |
//	+--------+---------------------------+--------+------+
//
// length counts everything after itself (4 + header + body). All integers are big endian.
// The header is a RemotingCommand without its body, in one of two serializations:
//
//   - JSON (type 0): {"code":..,"language":"JAVA","version":..,"opaque":..,"flag":..,
//     "remark":"..","extFields":{"k":"v"}}. Java writes language as its enum name.
//   - ROCKETMQ binary (type 1): code int16, language uint8, version int16, opaque int32,
//     flag int32, remark (int32 length + bytes), extFields (int32 length + repeated
//     int16 key length, key, int32 value length, value).
//
// flag bit 0 marks a response, bit 1 a oneway request. A response carries the opaque of
// its request and, by convention here, the serialization its request used.
//
// # Transport
//
// [Server] accepts connections and dispatches each request by code to a [Handler]
// running on the worker pool it was registered with; a full pool answers SYSTEM_BUSY.
// [Client] keeps one connection per address and correlates responses by opaque. Both
// sides use [Conn], so either side may send requests: the broker calls its clients back
// (for example NOTIFY_CONSUMER_IDS_CHANGED) over the connection the client opened.
//
// Each [Conn] has a reader goroutine and a writer goroutine. [Conn.Send] queues a frame
// and returns; the writer writes everything queued with one writev, so responses and
// pipelined requests share syscalls.
//
// # Hostile peers
//
// A server holds each peer to limits (see [ServerConfig]), so that one that misbehaves
// costs bounded memory and workers and leaves the others alone:
//
//   - Reads: a connection silent for IdleTimeout (serverChannelMaxIdleTimeSeconds) is
//     closed, and so is one whose frame is not whole FrameTimeout after its first byte
//     (a slowloris, a frame shorter than its length field). Both are read deadlines on
//     the socket, moved only when they must come sooner (deadline.go).
//   - Malformed frames (too long, a header length beyond the frame, an undecodable
//     header, a JSON header that is not an object) close their connection.
//   - Connections: past MaxConnections, or MaxConnectionsPerAddress from one IP, a new
//     connection is closed at once.
//   - Writes: past MaxQueuedBytesPerConnection queued for a peer, its connection is
//     closed; when the bytes queued on all connections of the process would pass
//     MaxQueuedBytesTotal, the connection with the most queued is (queued.go). Send
//     never waits on a server's connection, so a peer that does not read cannot hold
//     a worker. A connection a [Client] dialed waits instead, once 4 MiB are queued.
//   - Workers: a [Pool] serves connections in turn, and a full pool refuses the newest
//     request of the connection with the most queued (pool.go).
//
// Closing for any of these is logged once per remote address and event, then counted
// for a minute (lograte.go).
//
// # TLS
//
// With ServerConfig.TLS a server's listeners speak TLS as RocketMQ's tls.server.mode
// says: disabled, permissive (TLS and plain text on one port) or enforcing. The first
// bytes a peer sends tell a ClientHello (0x16) from a frame (whose first byte is at most
// 0x01), read on the connection's own goroutine under a handshake deadline, then handed
// to the frame reader or to the TLS handshake (tls.go). Refusals and failed handshakes
// are logged as above and counted (Server.TLSCounters). ClientConfig.TLS makes a
// Client's connections TLS ones. The certificates, their reloading and RocketMQ's tls.*
// keys are package pkg/tlsconfig's.
package remoting
