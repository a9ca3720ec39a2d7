package llmmetrics

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// endpoint is what a request's URL path tells.
type endpoint struct {
	proto         Protocol
	op            attribute.KeyValue // gen_ai.operation.name; invalid when unknown
	geminiStream  bool               // …:streamGenerateContent
	streamOptions bool               // OpenAI chat completions or completions: stream_options applies
	pathModel     string             // Gemini's /models/{model}:…, Azure's /deployments/{name}/…
}

// Operation names (semconv v1.41.0 gen_ai.operation.name values).
var (
	opChat           = semconv.GenAIOperationNameChat
	opTextCompletion = semconv.GenAIOperationNameTextCompletion
	opGenerate       = semconv.GenAIOperationNameGenerateContent
	opEmbeddings     = semconv.GenAIOperationNameEmbeddings
)

// classifyPath reads the protocol, the operation and a model name from a
// URL path; see detectProtocol.
func classifyPath(path string) endpoint {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	var ep endpoint
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		ep = endpoint{proto: ProtocolOpenAI, op: opChat, streamOptions: true}
	case strings.HasSuffix(path, "/completions"):
		ep = endpoint{proto: ProtocolOpenAI, op: opTextCompletion, streamOptions: true}
	case strings.HasSuffix(path, "/responses"):
		ep = endpoint{proto: ProtocolOpenAI, op: opChat}
	case strings.HasSuffix(path, "/embeddings") && !strings.HasSuffix(path, "/api/embeddings"):
		ep = endpoint{proto: ProtocolOpenAI, op: opEmbeddings}
	case strings.HasSuffix(path, "/messages"):
		ep = endpoint{proto: ProtocolAnthropic, op: opChat}
	case strings.HasSuffix(path, ":streamGenerateContent"):
		ep = endpoint{proto: ProtocolGemini, op: opGenerate, geminiStream: true}
	case strings.HasSuffix(path, ":generateContent"):
		ep = endpoint{proto: ProtocolGemini, op: opGenerate}
	case strings.HasSuffix(path, ":embedContent"), strings.HasSuffix(path, ":batchEmbedContents"):
		ep = endpoint{proto: ProtocolGemini, op: opEmbeddings}
	case strings.HasSuffix(path, "/api/chat"):
		ep = endpoint{proto: ProtocolOllama, op: opChat}
	case strings.HasSuffix(path, "/api/generate"):
		ep = endpoint{proto: ProtocolOllama, op: opTextCompletion}
	case strings.HasSuffix(path, "/api/embed"), strings.HasSuffix(path, "/api/embeddings"):
		ep = endpoint{proto: ProtocolOllama, op: opEmbeddings}
	default:
		return endpoint{}
	}
	switch {
	case ep.proto == ProtocolGemini:
		// …/models/{model}:method (Gemini API and Vertex AI).
		if i := strings.LastIndex(path, "/models/"); i >= 0 {
			m := path[i+len("/models/"):]
			if j := strings.LastIndexByte(m, ':'); j >= 0 {
				ep.pathModel = m[:j]
			}
		}
	case ep.proto == ProtocolOpenAI:
		// Azure OpenAI: /openai/deployments/{deployment}/chat/completions.
		if i := strings.Index(path, "/deployments/"); i >= 0 {
			m := path[i+len("/deployments/"):]
			if j := strings.IndexByte(m, '/'); j > 0 {
				ep.pathModel = m[:j]
			}
		}
	}
	return ep
}

// provOllama is Ollama's gen_ai.provider.name: not one of the well-known
// values of semconv v1.41.0, which allows others.
var provOllama = semconv.GenAIProviderNameKey.String("ollama")

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
	switch p {
	case ProtocolOpenAI:
		return semconv.GenAIProviderNameOpenAI
	case ProtocolAnthropic:
		return semconv.GenAIProviderNameAnthropic
	case ProtocolGemini:
		return semconv.GenAIProviderNameGCPGemini
	case ProtocolOllama:
		return provOllama
	}
	return attribute.KeyValue{}
}
