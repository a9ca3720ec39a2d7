package report

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxYAMLBytes bounds a YAML report. The YAML parser builds the whole
// document's tree before anything is read from it, about 17 times the
// text in memory (a 51 MB GuideLLM YAML file of 20,000 requests: 858 MB
// RSS, 3.3 s), so a YAML report is read whole up to this size (JSON,
// GuideLLM's default, is streamed whatever its size: the same run as JSON,
// 23 MB RSS, 0.5 s). A variable only so that tests reach it quickly.
var maxYAMLBytes = 32 << 20

func decodeGuideLLMYAML(fr *fileRun, f *glFacts) (int, error) {
	b, err := io.ReadAll(io.LimitReader(fr.src.br, int64(maxYAMLBytes)+1))
	if err != nil {
		return 0, fr.src.errorf(0, "%v", err)
	}
	if len(b) > maxYAMLBytes {
		return 0, fr.src.errorf(0, "a YAML report longer than the limit of %d MiB (YAML is read whole): save the run as JSON (GuideLLM's default, read as a stream)", maxYAMLBytes>>20)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return 0, yamlError(fr.src, 0, "", err)
	}
	top := yamlDeref(&root)
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = yamlDeref(top.Content[0])
	}
	if top.Kind != yaml.MappingNode {
		return 0, fr.src.errorf(top.Line, "a YAML report whose top is not a mapping: not a GuideLLM report")
	}
	n := 0
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "benchmarks" {
			continue
		}
		seq := yamlDeref(top.Content[i+1])
		if seq.Kind != yaml.SequenceNode {
			return 0, fr.src.errorf(seq.Line, "benchmarks: want a list")
		}
		for k, bn := range seq.Content {
			n++
			if err := glBenchYAML(fr, f, yamlDeref(bn), fmt.Sprintf("benchmark %d", k)); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// yamlDeref follows an alias.
func yamlDeref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// yamlLine finds "line N" in a YAML error.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns a YAML error about what into bad input, at the line it
// names (else at line).
func yamlError(src *source, line int, what string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		if n, err := strconv.Atoi(msg[m[2]:m[3]]); err == nil {
			line = n
		}
		msg = strings.TrimPrefix(strings.TrimPrefix(msg[m[1]:], ":"), " ")
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if what != "" {
		msg = what + ": " + msg
	}
	return src.errorf(line, "malformed YAML: %s", msg)
}

// glBenchYAML reads one benchmark node (v0.1: one report of benchmarks).
func glBenchYAML(fr *fileRun, f *glFacts, n *yaml.Node, name string) error {
	src := fr.src
	if n.Kind != yaml.MappingNode {
		return src.errorf(n.Line, "%s: want a mapping", name)
	}
	b := newGLBench(fr, f, name)
	val := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		val[n.Content[i].Value] = yamlDeref(n.Content[i+1])
	}
	if inner, ok := val["benchmarks"]; ok && inner.Kind == yaml.SequenceNode { // v0.1
		for k, bn := range inner.Content {
			if err := glBenchYAML(fr, f, yamlDeref(bn), fmt.Sprintf("%s.%d", name, k)); err != nil {
				return err
			}
		}
		return nil
	}
	decode := func(key string, v any) error {
		if node, ok := val[key]; ok {
			if err := node.Decode(v); err != nil {
				return yamlError(src, node.Line, name+": "+key, err)
			}
		}
		return nil
	}
	if err := decode("mode", &b.mode); err != nil {
		return err
	}
	if err := decode("rate", &b.rate); err != nil {
		return err
	}
	for _, key := range []string{"args", "config"} {
		var c struct {
			Strategy *glStrategy `yaml:"strategy"`
		}
		if err := decode(key, &c); err != nil {
			return err
		}
		if err := b.setStrategy(c.Strategy); err != nil {
			return src.errorf(val[key].Line, "%s: %s.strategy: %v", name, key, err)
		}
	}
	// yaml.dump sorts keys, and every benchmark and request of v0.2 and
	// later ends with its type_: a mapping without it was cut.
	sorted := b.load != nil
	if _, ok := val["type_"]; sorted && !ok {
		return src.errorf(n.Line, "%s ends before its last key (type_): the file is cut", name)
	}
	if err := decode("request_totals", &b.totals); err != nil {
		return err
	}
	if m, ok := val["metrics"]; ok && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "request_totals" {
				if err := yamlDeref(m.Content[i+1]).Decode(&b.totals); err != nil {
					return yamlError(src, m.Content[i+1].Line, name+": metrics.request_totals", err)
				}
			}
		}
	}
	lists := []struct {
		node *yaml.Node
		l    glList
		what string
	}{{val["results"], glResults, "results"}, {val["errors"], glErrors, "errors"}}
	if rq, ok := val["requests"]; ok && rq.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(rq.Content); i += 2 {
			if l, ok := glListOf(rq.Content[i].Value); ok {
				lists = append(lists, struct {
					node *yaml.Node
					l    glList
					what string
				}{yamlDeref(rq.Content[i+1]), l, "requests." + string(l)})
			}
		}
	}
	for _, ls := range lists {
		if ls.node == nil || ls.node.Kind == yaml.ScalarNode && ls.node.Tag == "!!null" {
			continue
		}
		if ls.node.Kind != yaml.SequenceNode {
			return src.errorf(ls.node.Line, "%s: %s: want a list", name, ls.what)
		}
		for k, qn := range ls.node.Content {
			qn = yamlDeref(qn)
			where := func(format string, args ...any) error {
				return src.errorf(qn.Line, "%s: %s[%d]: "+format, append([]any{name, ls.what, k}, args...)...)
			}
			if sorted && !yamlHas(qn, "type_") {
				return where("ends before its last key (type_): the file is cut")
			}
			var q glRequest
			if err := qn.Decode(&q); err != nil {
				return yamlError(src, qn.Line, fmt.Sprintf("%s: %s[%d]", name, ls.what, k), err)
			}
			if err := b.add(&q, ls.l, where); err != nil {
				return err
			}
		}
	}
	return b.end(func(format string, args ...any) error { return src.errorf(n.Line, format, args...) })
}

// yamlHas reports whether mapping n has key.
func yamlHas(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
