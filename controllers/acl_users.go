package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	brokeracl "github.com/openrmq/rocketmq-operator/broker/acl"
	"github.com/openrmq/rocketmq-operator/internal/resource"
	"github.com/openrmq/rocketmq-operator/pkg/acl"
)

// What a Broker's User resources put into the plain_acl.yml the operator renders for it
// (spec.acl without secretName). Both the Broker controller, which renders the file, and
// the User controller, which reports on each User, decide with userVerdict, so a User's
// condition says exactly why its account is or is not in the file:
//
//   - the operator's own accessKey is reserved;
//   - of Users with one accessKey, the oldest (creation time, then name) is rendered, the
//     others are duplicates: a newcomer never takes over an account;
//   - the secret key comes from the User's Secret, read around the cache, and must have at
//     least 7 characters (the brokers ignore shorter keys);
//   - the account must parse as the brokers parse it (broker/acl), else a bad value in one
//     User would make the brokers keep the old file for everyone.
//
// A User whose Secret or account is wrong keeps the account it had in the file before, so
// fixing a typo never locks an application out; deleting the User removes it.

// userVerdict is what one User contributes to the file.
type userVerdict struct {
	account *resource.ACLAccount // nil: not rendered from the current spec and Secret
	reason  string               // a v1alpha1.UserReason*, "" when account is set
	message string
	// keepOld: the account this User had in the previous file stays (a bad Secret or
	// account, not a duplicate or a reserved key).
	keepOld bool
}

// usersOf lists the Users naming br, oldest first, without those being deleted.
func usersOf(ctx context.Context, c client.Reader, br *v1alpha1.Broker) ([]v1alpha1.User, error) {
	var list v1alpha1.UserList
	if err := c.List(ctx, &list, client.InNamespace(br.Namespace)); err != nil {
		return nil, err
	}
	var out []v1alpha1.User
	for _, u := range list.Items {
		if u.Spec.BrokerRef.Name == br.Name && u.DeletionTimestamp.IsZero() {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.User) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// decideUser is userVerdict for u among users (usersOf's order), given the operator's
// accessKey ("" when it has none); secrets reads Secret content (an API reader).
func decideUser(ctx context.Context, secrets client.Reader, u *v1alpha1.User, users []v1alpha1.User, operatorKey string) (userVerdict, error) {
	if operatorKey != "" && u.Spec.AccessKey == operatorKey {
		return userVerdict{reason: v1alpha1.UserReasonReserved, message: fmt.Sprintf(
			"accessKey %s is the operator's own admin account on Broker %q: choose another", operatorKey, u.Spec.BrokerRef.Name)}, nil
	}
	for _, o := range users {
		if o.Name == u.Name {
			break
		}
		if o.Spec.AccessKey == u.Spec.AccessKey {
			return userVerdict{reason: v1alpha1.UserReasonDuplicate, message: fmt.Sprintf(
				"User %q, older, has accessKey %s on Broker %q: its account is the one in plain_acl.yml",
				o.Name, u.Spec.AccessKey, u.Spec.BrokerRef.Name)}, nil
		}
	}
	ref := u.Spec.SecretKeyRef
	s := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return userVerdict{reason: v1alpha1.UserReasonSecretNotFound, keepOld: true, message: fmt.Sprintf(
				"Secret %q (spec.secretKeyRef) not found", ref.Name)}, nil
		}
		return userVerdict{}, err
	}
	key := u.SecretKeyKey()
	sk := string(s.Data[key])
	switch {
	case sk == "":
		return userVerdict{reason: v1alpha1.UserReasonSecretKeyBad, keepOld: true, message: fmt.Sprintf(
			"Secret %q has no key %q (spec.secretKeyRef.key)", ref.Name, key)}, nil
	case len(sk) < 7:
		return userVerdict{reason: v1alpha1.UserReasonSecretKeyBad, keepOld: true, message: fmt.Sprintf(
			"the secret key in Secret %q, key %q, has %d characters: the brokers ignore accounts with fewer than 7",
			ref.Name, key, len(sk))}, nil
	}
	a := accountOf(u, sk)
	if err := checkAccount(a); err != nil {
		return userVerdict{reason: v1alpha1.UserReasonInvalid, keepOld: true, message: err.Error()}, nil
	}
	return userVerdict{account: &a}, nil
}

func accountOf(u *v1alpha1.User, secretKey string) resource.ACLAccount {
	return resource.ACLAccount{
		AccessKey: u.Spec.AccessKey, SecretKey: secretKey, WhiteRemoteAddress: u.Spec.WhiteRemoteAddress,
		Admin: u.Spec.Admin, DefaultTopicPerm: string(u.Spec.DefaultTopicPerm), DefaultGroupPerm: string(u.Spec.DefaultGroupPerm),
		TopicPerms: slices.Clone(u.Spec.TopicPerms), GroupPerms: slices.Clone(u.Spec.GroupPerms),
	}
}

// checkAccount parses a file of just this account as the brokers do.
func checkAccount(a resource.ACLAccount) error {
	data, err := resource.RenderPlainACL(&v1alpha1.Broker{}, resource.PlainACL{Accounts: []resource.ACLAccount{a}})
	if err != nil {
		return err
	}
	if _, err := brokeracl.ParseRules(data); err != nil {
		return fmt.Errorf("the brokers would not load this account: %w", err)
	}
	return nil
}

// operatorCredentials reads the account the operator signs with on br (see
// resource.OperatorCredentialsSecretName); found is false when it has none (yet).
func operatorCredentials(ctx context.Context, secrets client.Reader, br *v1alpha1.Broker) (acl.Credentials, bool, error) {
	name := resource.OperatorCredentialsSecretName(br)
	if name == "" {
		return acl.Credentials{}, false, nil
	}
	s := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: br.Namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return acl.Credentials{}, false, nil
		}
		return acl.Credentials{}, false, err
	}
	c := acl.Credentials{AccessKey: string(s.Data[v1alpha1.ACLAccessKeyKey]), SecretKey: string(s.Data[v1alpha1.ACLSecretKeyKey])}
	return c, c.AccessKey != "" && c.SecretKey != "", nil
}

// applySecret creates or updates a Secret the operator owns, reading it around the
// manager's cache (which keeps only Secrets' metadata). A Secret of that name that is not
// controlled by owner is left alone and reported. It says whether it wrote.
func applySecret(ctx context.Context, reader client.Reader, c client.Client, owner metav1.Object, b resource.Builder) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wrote = false
		obj, err := b.Build()
		if err != nil {
			return err
		}
		s := obj.(*corev1.Secret)
		err = reader.Get(ctx, client.ObjectKeyFromObject(s), s)
		if apierrors.IsNotFound(err) {
			if err := b.Update(s); err != nil {
				return err
			}
			wrote = true
			return c.Create(ctx, s)
		}
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(s, owner) {
			return fmt.Errorf("Secret %q exists and is not the operator's: rename or delete it, the operator keeps its own there", s.Name)
		}
		before := s.DeepCopy()
		if err := b.Update(s); err != nil {
			return err
		}
		if equalSecrets(before, s) {
			return nil
		}
		wrote = true
		return c.Update(ctx, s)
	})
	return wrote, err
}

func equalSecrets(a, b *corev1.Secret) bool {
	return a.Type == b.Type && maps.Equal(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Data, b.Data) && equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences)
}
