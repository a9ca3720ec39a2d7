package llmmetrics

import (
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// endpoint is what a request's URL path tells.
type endpoint struct {
	proto         Protocol
	op            attribute.KeyValue // gen_ai.operation.name; invalid when unknown
	array         bool               // a JSON answer is a stream of values in an array (pathRule.array)
	streamOptions bool               // OpenAI chat completions or completions: stream_options applies
	stream        streamMode         // whether it streams, when the path tells it (pathRule.stream)
	pathModel     string             // Gemini's /models/{model}:…, Azure's /deployments/{name}/…
	modelInPath   bool               // pathModel is the request's model (protocolSpec.pathIsModel)
}

// Operation names (semconv v1.41.0 gen_ai.operation.name values).
var (
	opChat           = semconv.GenAIOperationNameChat
	opTextCompletion = semconv.GenAIOperationNameTextCompletion
	opGenerate       = semconv.GenAIOperationNameGenerateContent
	opEmbeddings     = semconv.GenAIOperationNameEmbeddings
)

// pathEntry is one protocol's path rule, in the order classifyPath tries
// them.
type pathEntry struct {
	proto Protocol
	rule  pathRule
}

// allPaths holds every protocol's path rules, longest suffix first, so
// that of two suffixes that both match ("/completions" and
// "/chat/completions", "/embeddings" and "/api/embeddings") the longer,
// more specific one wins whatever the order of the table.
var allPaths []pathEntry

// initPaths builds allPaths and ndjsonProtocol from the protocol table.
func initPaths() {
	allPaths = allPaths[:0]
	for p, s := range protocolSpecs {
		for _, r := range s.paths {
			allPaths = append(allPaths, pathEntry{Protocol(p), r})
		}
		if s.ndjson {
			ndjsonProtocol = Protocol(p)
		}
	}
	slices.SortStableFunc(allPaths, func(a, b pathEntry) int { return len(b.rule.suffix) - len(a.rule.suffix) })
}

// classifyPath reads the protocol, the operation and a model name from a
// URL path; see detectProtocol.
func classifyPath(path string) endpoint {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	for _, e := range allPaths {
		if !strings.HasSuffix(path, e.rule.suffix) {
			continue
		}
		ep := endpoint{proto: e.proto, op: e.rule.op, array: e.rule.array, streamOptions: e.rule.streamOptions, stream: e.rule.stream}
		if s := e.proto.spec(); s.pathModel != nil {
			ep.pathModel = s.pathModel(path)
			ep.modelInPath = s.pathIsModel && ep.pathModel != ""
		}
		return ep
	}
	return endpoint{}
}

var hostProviders = map[string]attribute.KeyValue{
	"api.openai.com":                    semconv.GenAIProviderNameOpenAI,
	"api.anthropic.com":                 semconv.GenAIProviderNameAnthropic,
	"generativelanguage.googleapis.com": semconv.GenAIProviderNameGCPGemini,
	"aiplatform.googleapis.com":         semconv.GenAIProviderNameGCPVertexAI,
	"api.groq.com":                      semconv.GenAIProviderNameGroq,
	"api.deepseek.com":                  semconv.GenAIProviderNameDeepseek,
	"api.mistral.ai":                    semconv.GenAIProviderNameMistralAI,
	"api.x.ai":                          semconv.GenAIProviderNameXAI,
	"api.perplexity.ai":                 semconv.GenAIProviderNamePerplexity,
	"api.cohere.com":                    semconv.GenAIProviderNameCohere,
	"api.cohere.ai":                     semconv.GenAIProviderNameCohere,
}

// providerOf returns the gen_ai.provider.name of a request to host (a URL
// host, perhaps with a port) speaking protocol p: the well-known provider of
// the host, else the protocol's provider (as the GenAI conventions advise
// for OpenAI-compatible servers: "openai"); invalid when neither is known.
func providerOf(host string, p Protocol) attribute.KeyValue {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	for i := 0; i < len(host); i++ {
		if 'A' <= host[i] && host[i] <= 'Z' {
			host = strings.ToLower(host)
			break
		}
	}
	if kv, ok := hostProviders[host]; ok {
		return kv
	}
	switch {
	case strings.HasSuffix(host, ".openai.azure.com"):
		return semconv.GenAIProviderNameAzureAIOpenAI
	case strings.HasSuffix(host, ".services.ai.azure.com"), strings.HasSuffix(host, ".inference.ai.azure.com"),
		strings.HasSuffix(host, ".models.ai.azure.com"):
		return semconv.GenAIProviderNameAzureAIInference
	case strings.HasSuffix(host, "-aiplatform.googleapis.com"):
		return semconv.GenAIProviderNameGCPVertexAI
	case strings.HasPrefix(host, "bedrock-runtime.") && strings.HasSuffix(host, ".amazonaws.com"):
		return semconv.GenAIProviderNameAWSBedrock
	}
	if s := p.spec(); s != nil {
		return s.provider
	}
	return attribute.KeyValue{}
}
