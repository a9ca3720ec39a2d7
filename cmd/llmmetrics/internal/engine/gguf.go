// Package engine runs llmmetrics against a real inference engine: Ollama,
// built from the Go module proxy (scripts/ollama.sh), serving a small
// llama-architecture model with random weights that this package writes as
// a GGUF file. Its tests skip, saying why, when LLMMETRICS_OLLAMA does not
// name an Ollama binary.
package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// The GGUF container, version 3, as ggml's docs/gguf.md describes it (all
// integers little-endian):
//
//	magic "GGUF", version uint32, tensor count uint64, metadata count uint64
//	metadata: key (string), value type uint32, value
//	tensor infos: name (string), dimension count uint32, dimensions
//	  uint64 each (ne[0], the contiguous one, first), ggml type uint32,
//	  offset uint64 (from the start of the data section, aligned)
//	padding to general.alignment (32 by default), then the tensor data
//
// A string is its length as uint64 and its bytes; an array is the element
// type uint32, the length uint64 and the elements.
const (
	ggufVersion   = 3
	ggufAlignment = 32

	ggufInt32   = 5
	ggufUint32  = 4
	ggufFloat32 = 6
	ggufBool    = 7
	ggufString  = 8
	ggufArray   = 9

	ggmlTypeF32 = 0
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokenNormal  = 1
	tokenUnknown = 2
	tokenControl = 3
	tokenByte    = 6
)

// kv is one metadata entry; value is a uint32, float32, bool, string,
// []string, []float32 or []int32.
type kv struct {
	key   string
	value any
}

// tensor is one F32 tensor; dims are ne[0] (the row length) first.
type tensor struct {
	name string
	dims []uint64
	data []float32
}

// LlamaConfig is the shape of a random llama model.
type LlamaConfig struct {
	Embedding   int // embedding_length
	Layers      int // block_count
	Heads       int // attention.head_count (and head_count_kv)
	FeedForward int // feed_forward_length
	Context     int // context_length
	Seed        uint64
}

// SmallLlama is about 0.9 M parameters: fast enough on one CPU core that a
// load test measures the server, not the arithmetic.
var SmallLlama = LlamaConfig{Embedding: 128, Layers: 2, Heads: 4, FeedForward: 384, Context: 4096, Seed: 1}

// Vocabulary is a SentencePiece-style vocabulary for the "llama" tokenizer:
// <unk>, <s>, </s>, the 256 byte tokens <0x00>…<0xFF> (SentencePiece's
// byte fallback, which llama.cpp uses for characters outside the
// vocabulary and for the newline token), then plain pieces: every printable
// ASCII character, "▁" (a space), "▁" before each letter and digit, every
// pair of lowercase letters, alone and after "▁". It returns the pieces and
// their token types.
func Vocabulary() (pieces []string, types []int32) {
	add := func(p string, t int32) { pieces, types = append(pieces, p), append(types, t) }
	add("<unk>", tokenUnknown)
	add("<s>", tokenControl)
	add("</s>", tokenControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), tokenByte)
	}
	for c := '!'; c <= '~'; c++ {
		add(string(c), tokenNormal)
	}
	add("▁", tokenNormal)
	for c := '!'; c <= '~'; c++ {
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			add("▁"+string(c), tokenNormal)
		}
	}
	for a := 'a'; a <= 'z'; a++ {
		for b := 'a'; b <= 'z'; b++ {
			add(string(a)+string(b), tokenNormal)
			add("▁"+string(a)+string(b), tokenNormal)
		}
	}
	return pieces, types
}

// WriteLlama writes a llama-architecture GGUF model with random F32 weights
// to path. The output projection is zero for every token that is not a
// plain piece (<unk>, <s>, </s> and the byte tokens): their logit is always
// 0 while the plain pieces' are spread around 0, so a sampler that keeps
// the top 40 (Ollama's and llama.cpp's default top_k) or the most likely
// token never picks them. Generation therefore never stops before the
// request's token limit, and every token is printable ASCII: one streamed
// chunk per token.
func WriteLlama(path string, c LlamaConfig) error {
	kvs, tensors := llamaModel(c)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := writeGGUF(w, kvs, tensors); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// llamaModel returns the metadata and tensors of a random llama model, in
// llama.cpp's names (src/llama-arch.cpp: LLM_ARCH_LLAMA).
func llamaModel(c LlamaConfig) ([]kv, []tensor) {
	pieces, types := Vocabulary()
	scores := make([]float32, len(pieces))
	for i := range scores {
		scores[i] = -float32(i) // earlier pieces merge first
	}
	kvs := []kv{
		{"general.architecture", "llama"},
		{"general.name", "llmmetrics-random"},
		{"general.file_type", uint32(0)}, // all F32
		{"llama.context_length", uint32(c.Context)},
		{"llama.embedding_length", uint32(c.Embedding)},
		{"llama.block_count", uint32(c.Layers)},
		{"llama.feed_forward_length", uint32(c.FeedForward)},
		{"llama.attention.head_count", uint32(c.Heads)},
		{"llama.attention.head_count_kv", uint32(c.Heads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.dimension_count", uint32(c.Embedding / c.Heads)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.vocab_size", uint32(len(pieces))},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", pieces},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}

	rng := rand.New(rand.NewPCG(c.Seed, 0x6c6c6d6d))
	random := func(std float64, dims ...uint64) []float32 {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	e, ff, v := uint64(c.Embedding), uint64(c.FeedForward), uint64(len(pieces))
	output := random(1/math.Sqrt(float64(e)), e, v)
	for id, t := range types {
		if t != tokenNormal {
			clear(output[uint64(id)*e : uint64(id+1)*e])
		}
	}
	tensors := []tensor{
		{"token_embd.weight", []uint64{e, v}, random(1, e, v)},
		{"output_norm.weight", []uint64{e}, ones(c.Embedding)},
		{"output.weight", []uint64{e, v}, output},
	}
	std := 0.02
	for l := range c.Layers {
		blk := func(name string, dims []uint64, data []float32) {
			tensors = append(tensors, tensor{fmt.Sprintf("blk.%d.%s.weight", l, name), dims, data})
		}
		blk("attn_norm", []uint64{e}, ones(c.Embedding))
		blk("attn_q", []uint64{e, e}, random(std, e, e))
		blk("attn_k", []uint64{e, e}, random(std, e, e))
		blk("attn_v", []uint64{e, e}, random(std, e, e))
		blk("attn_output", []uint64{e, e}, random(std, e, e))
		blk("ffn_norm", []uint64{e}, ones(c.Embedding))
		blk("ffn_gate", []uint64{e, ff}, random(std, e, ff))
		blk("ffn_up", []uint64{e, ff}, random(std, e, ff))
		blk("ffn_down", []uint64{ff, e}, random(std, ff, e))
	}
	return kvs, tensors
}

// writeGGUF writes a GGUF version 3 file of the metadata and F32 tensors.
func writeGGUF(w io.Writer, kvs []kv, tensors []tensor) error {
	g := &ggufWriter{w: w}
	g.raw([]byte("GGUF"))
	g.u32(ggufVersion)
	g.u64(uint64(len(tensors)))
	g.u64(uint64(len(kvs)))
	for _, e := range kvs {
		g.str(e.key)
		g.value(e.value)
	}
	var offset uint64
	for _, t := range tensors {
		n := uint64(1)
		for _, d := range t.dims {
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("gguf: tensor %s: dimensions %v hold %d values, not %d", t.name, t.dims, n, len(t.data))
		}
		g.str(t.name)
		g.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.u64(d)
		}
		g.u32(ggmlTypeF32)
		g.u64(offset)
		offset = align(offset + 4*n)
	}
	g.pad()
	start := g.n
	for _, t := range tensors {
		for _, x := range t.data {
			g.u32(math.Float32bits(x))
		}
		g.pad()
	}
	if g.err == nil && uint64(g.n-start) != offset {
		return fmt.Errorf("gguf: wrote %d bytes of tensor data, the offsets say %d", g.n-start, offset)
	}
	return g.err
}

func align(n uint64) uint64 { return (n + ggufAlignment - 1) / ggufAlignment * ggufAlignment }

// ggufWriter writes little-endian values, keeping the first error and the
// byte count.
type ggufWriter struct {
	w   io.Writer
	n   int64
	err error
	buf [8]byte
}

func (g *ggufWriter) raw(p []byte) {
	if g.err != nil {
		return
	}
	n, err := g.w.Write(p)
	g.n += int64(n)
	g.err = err
}

func (g *ggufWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(g.buf[:4], v)
	g.raw(g.buf[:4])
}

func (g *ggufWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(g.buf[:8], v)
	g.raw(g.buf[:8])
}

func (g *ggufWriter) str(s string) {
	g.u64(uint64(len(s)))
	g.raw([]byte(s))
}

// pad writes zeros up to the next multiple of the alignment.
func (g *ggufWriter) pad() {
	if rem := g.n % ggufAlignment; rem != 0 {
		g.raw(make([]byte, ggufAlignment-rem))
	}
}

// value writes a metadata value: its type, then the value.
func (g *ggufWriter) value(v any) {
	switch v := v.(type) {
	case uint32:
		g.u32(ggufUint32)
		g.u32(v)
	case float32:
		g.u32(ggufFloat32)
		g.u32(math.Float32bits(v))
	case bool:
		g.u32(ggufBool)
		b := byte(0)
		if v {
			b = 1
		}
		g.raw([]byte{b})
	case string:
		g.u32(ggufString)
		g.str(v)
	case []string:
		g.arrayHead(ggufString, len(v))
		for _, s := range v {
			g.str(s)
		}
	case []float32:
		g.arrayHead(ggufFloat32, len(v))
		for _, x := range v {
			g.u32(math.Float32bits(x))
		}
	case []int32:
		g.arrayHead(ggufInt32, len(v))
		for _, x := range v {
			g.u32(uint32(x))
		}
	default:
		if g.err == nil {
			g.err = fmt.Errorf("gguf: no metadata type for %T", v)
		}
	}
}

func (g *ggufWriter) arrayHead(elem uint32, n int) {
	g.u32(ggufArray)
	g.u32(elem)
	g.u64(uint64(n))
}
