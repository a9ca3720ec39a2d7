module github.com/llmmetrics/llmmetrics/cmd/llmmetrics

go 1.26.0
