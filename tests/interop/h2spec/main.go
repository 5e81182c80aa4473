// Runs h2spec's cases against one server: our own small command around h2spec's library
// (github.com/summerwind/h2spec, read from ../shared/h2spec, whose copy has no command of its
// own). Flags: -host, -port, -tls (insecure: the test certificate), -timeout seconds,
// -junit FILE; the sections to run as arguments (all when none). Exits 1 when a case fails.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/summerwind/h2spec"
	"github.com/summerwind/h2spec/config"
)

func main() {
	host := flag.String("host", "127.0.0.1", "target host")
	port := flag.Int("port", 0, "target port")
	tls := flag.Bool("tls", false, "connect over TLS (the certificate is not checked)")
	timeout := flag.Int("timeout", 2, "seconds each case may take")
	junit := flag.String("junit", "", "where to write a JUnit report")
	flag.Parse()
	c := &config.Config{
		Host:         *host,
		Port:         *port,
		Path:         "/",
		Timeout:      time.Duration(*timeout) * time.Second,
		MaxHeaderLen: 4000,
		JUnitReport:  *junit,
		TLS:          *tls,
		Insecure:     *tls,
		Sections:     flag.Args(),
	}
	ok, err := h2spec.Run(c)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
