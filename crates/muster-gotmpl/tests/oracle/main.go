// Command oracle renders the template corpus with Go's text/template and sprig, and writes
// the expected outputs the Rust implementation is tested against.
//
// Usage (see README.md): oracle CORPUS.json GOLDEN.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data"`
	Mode     string          `json:"mode"`
}

type result struct {
	Name   string  `json:"name"`
	Output *string `json:"output,omitempty"`
	Error  bool    `json:"error,omitempty"`
	// Message is Go's error text, for people reading the file; tests compare only Error.
	Message string `json:"message,omitempty"`
}

// corpusDir is where "@name" data references are resolved (name.json next to the corpus).
var corpusDir string

// loadData decodes a case's data the way muster's Go code sees JSON: into interface{}.
// A JSON string "@name" refers to the shared fixture name.json next to the corpus.
func loadData(raw json.RawMessage) (interface{}, error) {
	if len(raw) == 0 {
		return map[string]interface{}{}, nil
	}
	var ref string
	if json.Unmarshal(raw, &ref) == nil && strings.HasPrefix(ref, "@") {
		b, err := os.ReadFile(filepath.Join(corpusDir, ref[1:]+".json"))
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var data interface{}
	err := json.Unmarshal(raw, &data)
	return data, err
}

// required is Helm's function of the same name; muster's function pack includes it.
func required(warn string, val interface{}) (interface{}, error) {
	if val == nil {
		return val, errors.New(warn)
	} else if s, ok := val.(string); ok && s == "" {
		return val, errors.New(warn)
	}
	return val, nil
}

func render(c testCase) (string, error) {
	funcs := sprig.TxtFuncMap()
	funcs["required"] = required
	t := template.New("template").Funcs(funcs)
	switch c.Mode {
	case "missingkey-error":
		t = t.Option("missingkey=error")
	case "string":
	default:
		return "", fmt.Errorf("unknown mode %q", c.Mode)
	}
	t, err := t.Parse(c.Template)
	if err != nil {
		return "", err
	}
	data, err := loadData(c.Data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "case %s: bad data: %v\n", c.Name, err)
		os.Exit(1)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: oracle CORPUS.json GOLDEN.json")
		os.Exit(2)
	}
	// Dates render in UTC, whatever the machine's zone.
	time.Local = time.UTC
	corpusDir = filepath.Dir(os.Args[1])
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cases []testCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	seen := map[string]bool{}
	results := make([]result, 0, len(cases))
	for _, c := range cases {
		if seen[c.Name] {
			fmt.Fprintf(os.Stderr, "duplicate case name %q\n", c.Name)
			os.Exit(1)
		}
		seen[c.Name] = true
		out, err := render(c)
		if err != nil {
			results = append(results, result{Name: c.Name, Error: true, Message: err.Error()})
			continue
		}
		o := out
		results = append(results, result{Name: c.Name, Output: &o})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d cases, %d errors\n", len(results), countErrors(results))
}

func countErrors(rs []result) int {
	n := 0
	for _, r := range rs {
		if r.Error {
			n++
		}
	}
	return n
}
