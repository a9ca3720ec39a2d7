package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteGGUFBytes: a file of one metadata entry and one tensor, byte by
// byte as ggml's docs/gguf.md lays it out.
func TestWriteGGUFBytes(t *testing.T) {
	var got bytes.Buffer
	require.NoError(t, writeGGUF(&got, []kv{{"a", uint32(7)}}, []tensor{{"t", []uint64{2}, []float32{1, 2}}}))

	var want bytes.Buffer
	le := func(v any) { require.NoError(t, binary.Write(&want, binary.LittleEndian, v)) }
	want.WriteString("GGUF")
	le(uint32(3))         // version
	le(uint64(1))         // tensors
	le(uint64(1))         // metadata entries
	le(uint64(1))         // key length
	want.WriteString("a") //
	le(uint32(4))         // UINT32
	le(uint32(7))         // value
	le(uint64(1))         // tensor name length
	want.WriteString("t") //
	le(uint32(1))         // dimensions
	le(uint64(2))         // ne[0]
	le(uint32(0))         // F32
	le(uint64(0))         // offset in the data section
	require.Equal(t, 74, want.Len(), "24 header + 17 metadata + 33 tensor info")
	want.Write(make([]byte, 96-74)) // padding to 32
	le(uint32(0x3f800000))          // 1.0
	le(uint32(0x40000000))          // 2.0
	want.Write(make([]byte, 128-104))
	assert.Equal(t, want.Bytes(), got.Bytes())
}

func TestWriteGGUFRejects(t *testing.T) {
	var b bytes.Buffer
	assert.ErrorContains(t, writeGGUF(&b, nil, []tensor{{"t", []uint64{3}, []float32{1, 2}}}), "dimensions [3] hold 3 values, not 2")
	assert.ErrorContains(t, writeGGUF(&b, []kv{{"k", 1.5}}, nil), "no metadata type for float64")
}

// TestVocabulary: 3 special tokens, 256 byte tokens, 94 printable ASCII
// characters, "▁", "▁" before the 62 letters and digits, and 26×26 letter
// pairs with and without "▁": 1,768 distinct pieces.
func TestVocabulary(t *testing.T) {
	pieces, types := Vocabulary()
	require.Len(t, pieces, 3+256+94+1+62+2*26*26)
	require.Len(t, types, len(pieces))
	seen := map[string]bool{}
	for _, p := range pieces {
		assert.False(t, seen[p], "piece %q twice", p)
		seen[p] = true
	}
	assert.Equal(t, []string{"<unk>", "<s>", "</s>", "<0x00>"}, pieces[:4])
	assert.Equal(t, "<0x0A>", pieces[3+10], "the newline byte token llama.cpp looks up")
	assert.Equal(t, []int32{tokenUnknown, tokenControl, tokenControl, tokenByte}, types[:4])
	assert.Equal(t, "▁zz", pieces[len(pieces)-1])
}

// TestWriteLlama reads the model file back: its header, the metadata keys
// llama.cpp requires for a llama model, the tensors' shapes and offsets,
// and the output rows that are zero for the tokens never to be sampled.
func TestWriteLlama(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.gguf")
	c := LlamaConfig{Embedding: 8, Layers: 1, Heads: 2, FeedForward: 16, Context: 64, Seed: 3}
	require.NoError(t, WriteLlama(path, c))
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	r := &reader{t: t, b: data}
	require.Equal(t, "GGUF", string(r.next(4)))
	require.Equal(t, uint32(3), r.u32())
	nTensors, nKV := r.u64(), r.u64()
	assert.Equal(t, uint64(3+9), nTensors, "embeddings, output norm, output, 9 per layer")
	keys := map[string]any{}
	for range nKV {
		k := r.str()
		keys[k] = r.value()
	}
	for _, k := range []string{"llama.context_length", "llama.embedding_length", "llama.block_count",
		"llama.feed_forward_length", "llama.attention.head_count", "llama.attention.layer_norm_rms_epsilon"} {
		assert.Contains(t, keys, k)
	}
	assert.Equal(t, "llama", keys["general.architecture"])
	assert.Equal(t, "llama", keys["tokenizer.ggml.model"])
	assert.Equal(t, uint32(8), keys["llama.embedding_length"])
	assert.Equal(t, 1768, keys["tokenizer.ggml.tokens"])

	type info struct {
		dims   []uint64
		offset uint64
	}
	infos := map[string]info{}
	var order []string
	for range nTensors {
		name := r.str()
		dims := make([]uint64, r.u32())
		for i := range dims {
			dims[i] = r.u64()
		}
		require.Equal(t, uint32(0), r.u32(), "F32")
		infos[name] = info{dims, r.u64()}
		order = append(order, name)
	}
	assert.Equal(t, []uint64{8, 1768}, infos["token_embd.weight"].dims, "ne[0] is the embedding")
	assert.Equal(t, []uint64{16, 8}, infos["blk.0.ffn_down.weight"].dims)
	assert.Equal(t, []uint64{8, 16}, infos["blk.0.ffn_gate.weight"].dims)
	start := (r.off + 31) / 32 * 32
	var want uint64
	for _, name := range order {
		assert.Equal(t, want, infos[name].offset, name)
		n := uint64(4)
		for _, d := range infos[name].dims {
			n *= d
		}
		want = (want + n + 31) / 32 * 32
	}
	assert.Equal(t, start+int(want), len(data), "the data section ends the file")

	// The output projection: rows 0..258 (specials and bytes) are zero, the
	// plain pieces' rows are not.
	out := start + int(infos["output.weight"].offset)
	row := func(id int) []float32 {
		v := make([]float32, 8)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[out+4*(8*id+i):]))
		}
		return v
	}
	assert.Equal(t, make([]float32, 8), row(2), "</s>")
	assert.Equal(t, make([]float32, 8), row(258), "<0xFF>")
	assert.NotEqual(t, make([]float32, 8), row(259), "the first plain piece")
}

// reader reads GGUF values back for the tests.
type reader struct {
	t   *testing.T
	b   []byte
	off int
}

func (r *reader) next(n int) []byte {
	require.LessOrEqual(r.t, r.off+n, len(r.b), "read past the end")
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.next(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.next(8)) }
func (r *reader) str() string { return string(r.next(int(r.u64()))) }

// value reads a metadata value; an array is its length.
func (r *reader) value() any {
	switch typ := r.u32(); typ {
	case ggufUint32:
		return r.u32()
	case ggufFloat32:
		return math.Float32frombits(r.u32())
	case ggufBool:
		return r.next(1)[0] == 1
	case ggufString:
		return r.str()
	case ggufArray:
		elem, n := r.u32(), int(r.u64())
		for range n {
			if elem == ggufString {
				r.str()
			} else {
				r.next(4)
			}
		}
		return n
	default:
		r.t.Fatalf("unexpected metadata type %d", typ)
		return nil
	}
}
