// Package protocol holds the RocketMQ 4.x wire data types shared by the name server,
// the broker and the operator's admin client: route data, topic configs, data versions,
// the broker registration body, cluster info, topic lists, KV tables, permission bits,
// well-known names, and the custom headers of the name-server requests.
//
// # JSON
//
// Java encodes these bodies with fastjson, which writes maps with integer keys unquoted
// ({0:"host:port"}). Encode writes compact standard JSON (integer keys quoted): the Go
// client parses brokerAddrs by hand, stripping quotes, and needs no spaces; fastjson
// reads quoted integer keys too. Decode accepts both spellings.
package protocol
