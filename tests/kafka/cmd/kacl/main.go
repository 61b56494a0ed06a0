// Command kacl creates the ACLs of the SASL test cluster (see ../../README.md).
//
//	kacl -bootstrap 127.0.0.1:39294 -user admin -password admin-secret
//
// It connects with SCRAM-SHA-256 as the super user and grants:
//
//	alice:   TransactionalId prefix "alice."      WRITE, DESCRIBE
//	         Topic literal "__coordination_state" READ, WRITE, DESCRIBE, CREATE, DESCRIBE_CONFIGS
//	         Topic prefix "alice."                READ, WRITE, DESCRIBE, CREATE, DESCRIBE_CONFIGS
//	         Group prefix "alice."                READ, DESCRIBE
//	         Cluster                              IDEMPOTENT_WRITE, DESCRIBE
//	mallory: Topic literal "__coordination_state" READ, DESCRIBE
//	         Topic prefix "alice."                READ, DESCRIBE
//
// Creating the same ACLs twice is harmless (the broker deduplicates).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:39294", "SASL_PLAINTEXT listener")
	user := flag.String("user", "admin", "SCRAM-SHA-256 super user")
	password := flag.String("password", "admin-secret", "password")
	timeout := flag.Duration("timeout", 60*time.Second, "overall bound")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.SASL(scram.Auth{User: *user, Pass: *password}.AsSha256Mechanism()),
	)
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topicOps := []kadm.ACLOperation{kadm.OpRead, kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate, kadm.OpDescribeConfigs}
	var all []*kadm.ACLBuilder
	all = append(all,
		kadm.NewACLs().Allow("User:alice").AllowHosts().
			TransactionalIDs("alice.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpWrite, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:alice").AllowHosts().
			Topics("__coordination_state").ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(topicOps...),
		kadm.NewACLs().Allow("User:alice").AllowHosts().
			Topics("alice.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(topicOps...),
		kadm.NewACLs().Allow("User:alice").AllowHosts().
			Groups("alice.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:alice").AllowHosts().
			Clusters().ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpIdempotentWrite, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:mallory").AllowHosts().
			Topics("__coordination_state").ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpRead, kadm.OpDescribe),
		kadm.NewACLs().Allow("User:mallory").AllowHosts().
			Topics("alice.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpDescribe),
	)
	var lastErr error
	for {
		lastErr = createAll(ctx, adm, all)
		if lastErr == nil {
			fmt.Println("kacl: ACLs created")
			return
		}
		select {
		case <-ctx.Done():
			fail(fmt.Errorf("creating ACLs: %w", lastErr))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func createAll(ctx context.Context, adm *kadm.Client, all []*kadm.ACLBuilder) error {
	for _, b := range all {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := adm.CreateACLs(rctx, b)
		cancel()
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%s %s %s: %w", r.Principal, r.Name, r.Operation, r.Err)
			}
		}
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kacl:", err)
	os.Exit(1)
}
