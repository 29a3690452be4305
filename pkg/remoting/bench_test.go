package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"testing"
)

// sendCommand is a typical SEND_MESSAGE_V2 request: 12 header fields, a 1 KiB body.
func sendCommand(ser SerializeType) *Command {
	c := NewRequest(SendMessageV2, sendHeaderFields, bytes.Repeat([]byte("x"), 1024))
	c.Serialize = ser
	return c
}

func BenchmarkEncode(b *testing.B) {
	for _, ser := range []SerializeType{JSON, Binary} {
		b.Run(ser.String(), func(b *testing.B) {
			c := sendCommand(ser)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, ser := range []SerializeType{JSON, Binary} {
		b.Run(ser.String(), func(b *testing.B) {
			frame, err := Encode(sendCommand(ser))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSendHeader is the broker's SendMessageRequestHeader, under SEND_MESSAGE_V2's
// letters.
type benchSendHeader struct {
	ProducerGroup         string `rmq:"a,required"`
	Topic                 string `rmq:"b,required"`
	DefaultTopic          string `rmq:"c,required"`
	DefaultTopicQueueNums int32  `rmq:"d,required"`
	QueueID               int32  `rmq:"e,required"`
	SysFlag               int32  `rmq:"f,required"`
	BornTimestamp         int64  `rmq:"g,required"`
	Flag                  int32  `rmq:"h,required"`
	Properties            string `rmq:"i"`
	ReconsumeTimes        int32  `rmq:"j"`
	UnitMode              bool   `rmq:"k"`
	Batch                 bool   `rmq:"m"`
	MaxReconsumeTimes     *int32 `rmq:"l"`
}

// BenchmarkDecodeClientSend reads a SEND_MESSAGE_V2 as each official client writes it
// (the java_json_send and go_json_send fixtures' headers, 1 KiB body): the frame, then
// its send header, with the extFields made into a map (mapped) or left as they came
// (unmapped, as the broker reads sends).
func BenchmarkDecodeClientSend(b *testing.B) {
	for _, client := range []string{"java", "go"} {
		frame := readFixture(b, client+"_json_send")[4:]
		header := frame[:4+int(binary.BigEndian.Uint32(frame)&maxHeaderLength)]
		frame = append(slices.Clip(header), make([]byte, 1024)...) // whatever body the fixture has: 1 KiB
		for _, mode := range []struct {
			name  string
			codes []int16
		}{{"mapped", nil}, {"unmapped", []int16{SendMessageV2}}} {
			b.Run(client+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := decode(frame, mode.codes)
					if err != nil {
						b.Fatal(err)
					}
					var h benchSendHeader
					if err := DecodeHeader(c, &h); err != nil || h.QueueID != 3 {
						b.Fatalf("%+v, %v", h, err)
					}
				}
			})
		}
	}
}

// BenchmarkRoundTrip measures request/response over loopback TCP against an echo
// handler: Sync waits for each response before sending the next; Pipelined keeps up to
// 64 requests in flight on the one connection.
func BenchmarkRoundTrip(b *testing.B) {
	s := NewServer(ServerConfig{})
	s.Handle(SendMessageV2, HandlerFunc(func(_ context.Context, _ *Conn, req *Command) *Command {
		return req.NewResponse(Success, "")
	}), s.NewPool("send", 4, 10000))
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr := l.Addr().String()
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	ctx := context.Background()

	for _, ser := range []SerializeType{JSON, Binary} {
		b.Run("Sync/"+ser.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.Invoke(ctx, addr, sendCommand(ser)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Pipelined/"+ser.String(), func(b *testing.B) {
			b.ReportAllocs()
			inflight := make(chan struct{}, 64)
			var wg sync.WaitGroup
			for b.Loop() {
				inflight <- struct{}{}
				wg.Add(1)
				err := cl.InvokeAsync(ctx, addr, sendCommand(ser), func(_ *Command, err error) {
					if err != nil {
						b.Error(err)
					}
					<-inflight
					wg.Done()
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		})
	}
}
