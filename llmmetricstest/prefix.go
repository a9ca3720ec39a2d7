package llmmetricstest

import "container/list"

// The fake server's prefix caches: by group (ServerConfig.SharedPrefixTokens)
// and by content (ServerConfig.PrefixCacheBlocks).

// lookupPrefix returns how many of j's prompt tokens the prefix cache
// holds, and caches j's prefix (evicting the least recently used).
func (s *Server) lookupPrefix(j *job) int {
	c := &s.cfg
	if c.PrefixCacheBlocks > 0 {
		return s.lookupBlocks(j)
	}
	if c.SharedPrefixTokens <= 0 {
		return 0
	}
	groups := max(c.PrefixGroups, 1)
	entries := c.PrefixCacheEntries
	if entries <= 0 {
		entries = groups
	}
	group := j.id % groups
	hit := false
	for i, g := range s.prefixes {
		if g == group {
			s.prefixes = append(s.prefixes[:i], s.prefixes[i+1:]...)
			hit = true
			break
		}
	}
	if len(s.prefixes) >= entries {
		s.prefixes = s.prefixes[1:]
	}
	s.prefixes = append(s.prefixes, group)
	if !hit {
		return 0
	}
	return max(min(c.SharedPrefixTokens, j.prompt-1), 0)
}

// PrefixBlockTokens is the block size of the content prefix cache
// (ServerConfig.PrefixCacheBlocks), vLLM's default block size.
const PrefixBlockTokens = 16

// blockHashes returns the chained hashes of text's whole blocks of
// PrefixBlockTokens tokens (4 characters each): hash i covers text[:64(i+1)].
func blockHashes(text string) []uint64 {
	const size = 4 * PrefixBlockTokens
	hs := make([]uint64, 0, len(text)/size)
	h := uint64(14695981039346656037) // FNV-1a, chained across blocks
	for i := 0; i+size <= len(text); i += size {
		for _, c := range []byte(text[i : i+size]) {
			h = (h ^ uint64(c)) * 1099511628211
		}
		hs = append(hs, h)
	}
	return hs
}

// blockCache is a least-recently-used set of block hashes.
type blockCache struct {
	order *list.List // of uint64, most recent at the front
	index map[uint64]*list.Element
}

// lookupBlocks returns how many of j's prompt tokens the content prefix
// cache holds (its leading blocks found), then caches all of j's blocks.
func (s *Server) lookupBlocks(j *job) int {
	c := &s.blockLRU
	if c.order == nil {
		c.order, c.index = list.New(), map[uint64]*list.Element{}
	}
	hit := 0
	for hit < len(j.blocks) && c.index[j.blocks[hit]] != nil {
		hit++
	}
	for _, h := range j.blocks {
		if e := c.index[h]; e != nil {
			c.order.MoveToFront(e)
			continue
		}
		c.index[h] = c.order.PushFront(h)
		if c.order.Len() > s.cfg.PrefixCacheBlocks {
			delete(c.index, c.order.Remove(c.order.Back()).(uint64))
		}
	}
	j.blocks = nil
	return max(min(hit*PrefixBlockTokens, j.prompt-1), 0)
}

// prefixCache reports whether a prefix cache is on (usage then reports
// cached tokens, zero included).
func (c *ServerConfig) prefixCache() bool {
	return c.SharedPrefixTokens > 0 || c.PrefixCacheBlocks > 0
}
