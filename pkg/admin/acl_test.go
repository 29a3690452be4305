package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	brokerconfig "github.com/openrmq/rocketmq-operator/broker/config"
	"github.com/openrmq/rocketmq-operator/internal/testcluster"
	"github.com/openrmq/rocketmq-operator/pkg/admin"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
	"github.com/openrmq/rocketmq-operator/pkg/remoting"
)

const testRules = `
accounts:
- accessKey: operator
  secretKey: operator-secret
  admin: true
- accessKey: application
  secretKey: app-secret
  defaultGroupPerm: SUB
`

// TestSignedAdminOnACLBroker: against a broker with aclEnable=true, a client signing as an
// admin account creates a subscription group; unsigned, wrongly signed or non-admin
// requests are refused with the broker's AclException; the unsigned client it was made
// from is unaffected by the signed one's Close.
func TestSignedAdminOnACLBroker(t *testing.T) {
	c := testcluster.Start(t, func(bc *brokerconfig.Config) {
		bc.BrokerClusterName = "acl"
		testcluster.EnableACL(t, bc, testRules)
	})
	rc := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { rc.Close() })
	unsigned := admin.New(rc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	refused := func(a *admin.Client, remark string) {
		t.Helper()
		err := a.CreateOrUpdateSubscriptionGroup(ctx, c.BrokerAddr, protocol.NewSubscriptionGroupConfig("g-refused"))
		var ae *admin.Error
		if !errors.As(err, &ae) || ae.Code != remoting.SystemError || !strings.Contains(ae.Remark, remark) {
			t.Fatalf("got %v, want a refusal with %q", err, remark)
		}
	}
	refused(unsigned, "No accessKey is configured")
	wrong := unsigned.WithCredentials(admin.Credentials{AccessKey: "operator", SecretKey: "not-it"})
	defer wrong.Close()
	refused(wrong, "Check signature failed for accessKey=operator")
	app := unsigned.WithCredentials(admin.Credentials{AccessKey: "application", SecretKey: "app-secret"})
	defer app.Close()
	refused(app, "Need admin permission for request code=200, but accessKey=application is not")

	signed := unsigned.WithCredentials(admin.Credentials{AccessKey: "operator", SecretKey: "operator-secret"})
	if err := signed.CreateOrUpdateSubscriptionGroup(ctx, c.BrokerAddr, protocol.NewSubscriptionGroupConfig("g-signed")); err != nil {
		t.Fatalf("signed admin: %v", err)
	}
	groups, err := signed.SubscriptionGroups(ctx, c.BrokerAddr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups["g-signed"]; !ok {
		t.Fatalf("the group is not on the broker: %v", groups)
	}
	if _, ok := groups["g-refused"]; ok {
		t.Fatal("a refused request created its group")
	}
	// A body and header fields are signed too (UPDATE_BROKER_CONFIG carries a body).
	if err := signed.UpdateBrokerConfig(ctx, c.BrokerAddr, map[string]string{"namesrvAddr": c.NamesrvAddr}); err != nil {
		t.Fatalf("signed UPDATE_BROKER_CONFIG: %v", err)
	}
	if _, err := signed.ConsumeStats(ctx, c.BrokerAddr, "g-signed", ""); err != nil {
		var ae *admin.Error
		if !errors.As(err, &ae) || strings.Contains(ae.Remark, "AclException") {
			t.Fatalf("signed GET_CONSUME_STATS refused by ACL: %v", err)
		}
	}
	if err := signed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := signed.DeleteSubscriptionGroup(ctx, c.BrokerAddr, "g-signed"); !errors.Is(err, remoting.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	// The unsigned client still works (the broker answers, and refuses).
	refused(unsigned, "No accessKey is configured")
	if err := unsigned.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Invoke(ctx, c.BrokerAddr, remoting.NewRequest(remoting.HeartBeat, nil, nil)); err != nil {
		t.Fatalf("Close of a client from New closed the caller's remoting client: %v", err)
	}
}

// TestRuntimeInfoProbesAnAccount: GET_BROKER_RUNTIME_INFO signed as an account needs no
// permission, so it tells whether the broker's loaded rules hold the account with that
// secret key: a non-admin account passes, an unknown one or a wrong key is refused with
// the broker's remark.
func TestRuntimeInfoProbesAnAccount(t *testing.T) {
	c := testcluster.Start(t, func(bc *brokerconfig.Config) {
		bc.BrokerClusterName = "probe"
		testcluster.EnableACL(t, bc, testRules)
	})
	rc := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { rc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	probe := func(creds admin.Credentials) error {
		a := admin.New(rc).WithCredentials(creds)
		defer a.Close()
		_, err := a.RuntimeInfo(ctx, c.BrokerAddr)
		return err
	}
	if err := probe(admin.Credentials{AccessKey: "application", SecretKey: "app-secret"}); err != nil {
		t.Fatalf("a loaded non-admin account: %v", err)
	}
	for creds, remark := range map[admin.Credentials]string{
		{AccessKey: "newcomer", SecretKey: "newcomer-secret"}: "No acl config for newcomer",
		{AccessKey: "application", SecretKey: "old-secret"}:   "Check signature failed for accessKey=application",
	} {
		var ae *admin.Error
		if err := probe(creds); !errors.As(err, &ae) || !strings.Contains(ae.Remark, remark) {
			t.Errorf("%s: %v, want a refusal with %q", creds, err, remark)
		}
	}
}
