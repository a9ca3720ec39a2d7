package llmmetricstest

// The fake server's prefix cache (ServerConfig.SharedPrefixTokens).

// lookupPrefix returns how many of j's prompt tokens the prefix cache
// holds, and caches j's prefix (evicting the least recently used).
func (s *Server) lookupPrefix(j *job) int {
	c := &s.cfg
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
