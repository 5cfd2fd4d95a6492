//! Why a tool call failed.

use std::time::Duration;

use crate::BoxError;
use crate::secret::Redactor;

/// Why a tool call produced no result.
///
/// A tool that ran and reported failure answers with a `CallToolResult` whose `isError` is
/// true; this type is for calls that did not get that far. [`ToolError::is_retryable`] splits
/// transient failures (the same call may succeed later) from terminal ones; the workflow
/// engine decides retries from it, never from message text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No provider offers a tool of this name (to this caller).
    #[error("tool not found: {name}")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The arguments do not fit the tool.
    #[error("invalid arguments: {message}")]
    InvalidArguments {
        /// What is wrong, naming the argument.
        message: String,
    },
    /// The call exceeded its budget.
    #[error("tool call timed out after {}s", .after.as_secs_f64())]
    Timeout {
        /// The budget that ran out.
        after: Duration,
    },
    /// The caller cancelled the call.
    #[error("tool call cancelled")]
    Cancelled,
    /// The caller may not call the tool.
    #[error("access denied: {reason}")]
    Denied {
        /// Why.
        reason: String,
    },
    /// The provider cannot serve calls right now (not connected, restarting).
    #[error("{provider} is unavailable: {reason}")]
    Unavailable {
        /// The provider, e.g. the MCP server name.
        provider: String,
        /// Why.
        reason: String,
    },
    /// The tool's handler failed; the message is shown to the caller as it is.
    #[error("{message}")]
    Failed {
        /// What went wrong, without credentials.
        message: String,
        /// Whether the same call may succeed when retried.
        retryable: bool,
    },
    /// The provider failed while handling the call.
    #[error("{provider}: {source}")]
    Backend {
        /// The provider.
        provider: String,
        /// Whether the same call may succeed when retried.
        retryable: bool,
        /// The cause.
        #[source]
        source: BoxError,
    },
}

impl ToolError {
    /// A terminal [`ToolError::Failed`] with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: false,
        }
    }

    /// Whether the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Timeout { .. } | Self::Unavailable { .. } => true,
            Self::Backend { retryable, .. } | Self::Failed { retryable, .. } => *retryable,
            Self::UnknownTool { .. }
            | Self::InvalidArguments { .. }
            | Self::Cancelled
            | Self::Denied { .. } => false,
        }
    }

    /// This error with every value `redactor` knows cut out of its texts. An error whose
    /// texts hold no such value is returned as it is (its source chain intact); a
    /// [`Backend`](Self::Backend) error whose chain does is flattened into one redacted text.
    #[must_use]
    pub fn redacted(self, redactor: &Redactor) -> Self {
        if redactor.is_empty() {
            return self;
        }
        let clean = |text: String| redactor.redact_string(text);
        match self {
            Self::UnknownTool { name } => Self::UnknownTool { name: clean(name) },
            Self::InvalidArguments { message } => Self::InvalidArguments {
                message: clean(message),
            },
            Self::Denied { reason } => Self::Denied {
                reason: clean(reason),
            },
            Self::Unavailable { provider, reason } => Self::Unavailable {
                provider,
                reason: clean(reason),
            },
            Self::Failed { message, retryable } => Self::Failed {
                message: clean(message),
                retryable,
            },
            Self::Backend {
                provider,
                retryable,
                source,
            } => {
                let mut chain = source.to_string();
                let mut next = source.source();
                while let Some(cause) = next {
                    chain.push_str(": ");
                    chain.push_str(&cause.to_string());
                    next = cause.source();
                }
                match redactor.redact(&chain) {
                    std::borrow::Cow::Borrowed(_) => Self::Backend {
                        provider,
                        retryable,
                        source,
                    },
                    std::borrow::Cow::Owned(text) => Self::Backend {
                        provider,
                        retryable,
                        source: text.into(),
                    },
                }
            }
            other @ (Self::Timeout { .. } | Self::Cancelled) => other,
        }
    }

    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::Timeout { .. } => "timeout",
            Self::Cancelled => "cancelled",
            Self::Denied { .. } => "denied",
            Self::Unavailable { .. } => "unavailable",
            Self::Backend { .. } => "backend",
            Self::Failed { .. } => "failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_reaches_every_text() {
        let r = Redactor::from_values(["tok-secret"]);
        let e = ToolError::failed("server said tok-secret").redacted(&r);
        assert_eq!(e.to_string(), "server said [redacted]");
        let io = std::io::Error::other("GET http://h/?t=tok-secret");
        let e = ToolError::Backend {
            provider: "s".into(),
            retryable: true,
            source: Box::new(io),
        }
        .redacted(&r);
        assert_eq!(e.to_string(), "s: GET http://h/?t=[redacted]");
        assert!(e.is_retryable());
        let untouched = ToolError::Backend {
            provider: "s".into(),
            retryable: false,
            source: Box::new(std::io::Error::other("plain")),
        }
        .redacted(&r);
        let ToolError::Backend { source, .. } = untouched else {
            panic!("variant changed");
        };
        assert!(source.downcast_ref::<std::io::Error>().is_some());
    }
}
