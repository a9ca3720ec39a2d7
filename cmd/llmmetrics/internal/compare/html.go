package compare

func writeHTML(name string, c *Comparison, ins [2]*Input, args []string) error { return nil }
