//! The step display of `muster run`.

use std::io::{IsTerminal as _, Write as _};

use serde_json::Value;
use tokio::time::Instant;

/// Shows finished steps on stderr.
#[derive(Debug)]
pub(super) struct Display {
    workflow: String,
    quiet: bool,
    live: bool,
    steps: usize,
    started: Instant,
    status_shown: bool,
}

impl Display {
    /// A display for `workflow`; live when stderr is a terminal.
    pub(super) fn new(workflow: &str, quiet: bool) -> Self {
        let display = Self {
            workflow: workflow.to_owned(),
            quiet,
            live: std::io::stderr().is_terminal(),
            steps: 0,
            started: Instant::now(),
            status_shown: false,
        };
        if display.live && !quiet {
            display.write(&format!("● running workflow {workflow}…"));
        }
        Self {
            status_shown: display.live && !quiet,
            ..display
        }
    }

    /// Whether any step was shown from progress notifications.
    pub(super) fn saw_steps(&self) -> bool {
        self.steps > 0
    }

    /// Shows one progress notification.
    pub(super) fn progress(&mut self, params: &Value) {
        let Some(message) = params.get("message").and_then(Value::as_str) else {
            return;
        };
        match parse_step(message) {
            Some((step, status)) => self.step(step, status),
            None => self.line(message),
        }
    }

    /// Shows the steps a workflow result lists (when no progress arrived).
    pub(super) fn steps_from_result(&mut self, result: &Value) {
        let Some(steps) = result.get("steps").and_then(Value::as_array) else {
            return;
        };
        for step in steps {
            let id = step.get("id").and_then(Value::as_str).unwrap_or("?");
            let status = step
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("completed");
            self.step(id, status);
        }
    }

    /// Clears the status line.
    pub(super) fn finish(&mut self) {
        if self.status_shown {
            self.write("\r\x1b[2K");
            self.status_shown = false;
        }
    }

    fn step(&mut self, step: &str, status: &str) {
        self.steps += 1;
        if self.live {
            let mark = match status {
                "completed" => "✓",
                "failed" => "✗",
                "skipped" => "↷",
                _ => "•",
            };
            self.line(&format!("{mark} {step} {status}"));
        } else {
            self.line(&format!("step {step} {status}"));
        }
    }

    /// Prints `text` as its own line, keeping the live status line below it.
    fn line(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        if !self.live {
            self.write(&format!("{text}\n"));
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f32();
        let status = format!(
            "● running workflow {}… {} step{} done ({elapsed:.1}s)",
            self.workflow,
            self.steps,
            if self.steps == 1 { "" } else { "s" }
        );
        self.write(&format!("\r\x1b[2K  {text}\n{status}"));
        self.status_shown = true;
    }

    fn write(&self, text: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
    }
}

/// `step <id> <status>` → `(id, status)`.
fn parse_step(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("step ")?;
    let (step, status) = rest.rsplit_once(' ')?;
    Some((step, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_step_messages() {
        assert_eq!(
            parse_step("step first completed"),
            Some(("first", "completed"))
        );
        assert_eq!(parse_step("hello"), None);
    }
}
