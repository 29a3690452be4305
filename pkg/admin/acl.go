package admin

import (
	"crypto/tls"

	"github.com/openrmq/rocketmq-operator/pkg/acl"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

// Credentials are the account of the brokers' plain_acl.yml that admin calls are signed
// with. Brokers with aclEnable=true refuse unsigned requests (unless the caller's address
// is white-listed), and admin requests unless the account has admin: true.
type Credentials = acl.Credentials

// Signer returns a remoting.ClientConfig.BeforeSend hook that signs every request with
// creds as the official clients' AclClientRPCHook does: AccessKey and Signature ext fields,
// the signature covering every other ext field and the body.
func Signer(creds Credentials) func(*remoting.Command) {
	return func(req *remoting.Command) {
		if req.ExtFields == nil {
			req.ExtFields = map[string]string{}
		}
		// The body goes out as Body then BodyParts; the broker signs what it receives.
		creds.SignFields(req.ExtFields, append([][]byte{req.Body}, req.BodyParts...)...)
	}
}

// WithCredentials returns a client whose requests are all signed with creds. It sends
// through a remoting client of its own, configured like c's plus the signing hook (after
// c's own hook, if any), so c and the connections it uses are unaffected; Close the
// returned client to release its connections.
func (c *Client) WithCredentials(creds Credentials) *Client {
	cfg := c.rc.Config()
	sign := Signer(creds)
	if before := cfg.BeforeSend; before != nil {
		cfg.BeforeSend = func(req *remoting.Command) {
			before(req)
			sign(req)
		}
	} else {
		cfg.BeforeSend = sign
	}
	return &Client{rc: remoting.NewClient(cfg), owned: true, OnCall: c.OnCall}
}

// WithTLS returns a client whose connections are TLS ones with cfg (the brokers run
// with tls.server.mode enforcing or permissive), through a remoting client of its own
// configured like c's otherwise; Close it to release its connections. Chain it with
// WithCredentials for brokers with both TLS and ACL.
func (c *Client) WithTLS(cfg *tls.Config) *Client {
	rc := c.rc.Config()
	rc.TLS = cfg
	return &Client{rc: remoting.NewClient(rc), owned: true}
}

// Close closes the remoting client when c made it (WithCredentials); a client from New
// leaves its remoting client to whoever passed it.
func (c *Client) Close() error {
	if c.owned {
		return c.rc.Close()
	}
	return nil
}
