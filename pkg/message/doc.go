// Package message holds the RocketMQ 4.x message record format shared by the
// broker, the admin client and tests: the commitlog record layout (encode and
// decode), the properties string (key\x01value\x02...), offsetMsgId, the
// MessageSysFlag bits, the consume-queue tag hash and the standard property
// names.
//
// Commitlog record (big endian; "host" is 4-byte IPv4 + 4-byte port, or
// 16-byte IPv6 + 4-byte port when the matching V6 sysflag bit is set):
//
//	off  size  field
//	0    4     total size of the record, this field included
//	4    4     magic code, -626843481 (0xDAA320A7)
//	8    4     body CRC: IEEE CRC32 of the body & 0x7FFFFFFF
//	12   4     queue id
//	16   4     flag (user flag)
//	20   8     queue offset (logical index in the consume queue)
//	28   8     physical offset (commitlog offset of this record)
//	36   4     sysflag
//	40   8     born timestamp (ms)
//	48   8|20  born host
//	..   8     store timestamp (ms)
//	..   8|20  store host
//	..   4     reconsume times
//	..   8     prepared transaction offset
//	..   4     body length, then the body
//	..   1     topic length, then the topic
//	..   2     properties length, then the properties string
//
// A blank record (end of a commitlog segment) is total size (the remaining
// bytes of the segment, at least 8) followed by magic -875286124 (0xCBD43194).
package message
