// Command ociimage assembles the project's container image from the static binaries in
// bin/ without a Docker engine: one layer holding /manager, /namesrv, /broker and
// /rmqbench on an empty base, written as a tarball that `docker load` and `podman load`
// accept. It gives
// the same filesystem and entrypoint as the Dockerfile's final stage, minus distroless's
// base files, which static binaries do not need.
//
//	go run ./hack/ociimage -bin bin -tag openrmq/rocketmq-operator:dev -out bin/image.tar
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var opts options
	flag.StringVar(&opts.binDir, "bin", "bin", "folder holding the static binaries")
	flag.StringVar(&opts.tag, "tag", "openrmq/rocketmq-operator:dev", "image reference recorded in the tarball")
	flag.StringVar(&opts.out, "out", "bin/image.tar", "tarball to write")
	flag.Parse()
	opts.binaries = []string{"manager", "namesrv", "broker", "rmqbench"}
	digest, err := build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s, %s)\n", opts.out, opts.tag, digest)
}
