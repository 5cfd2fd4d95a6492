//! The writer thread of the event log: appends queued events to the day's file and removes
//! expired files.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;

use chrono::{NaiveDate, TimeDelta, Utc};
use muster_core::Event;
use tokio::sync::oneshot;

use super::files;

/// What the log asks its writer to do.
#[derive(Debug)]
pub(super) enum Command {
    /// Append this event.
    Append(Box<Event>),
    /// Answer once everything queued before has been written.
    Flush(oneshot::Sender<()>),
}

/// The writer's state: the open file of the current day and the last cleanup.
#[derive(Debug)]
pub(super) struct Writer {
    dir: PathBuf,
    retention_days: i64,
    open: Option<(NaiveDate, File)>,
    cleaned_on: Option<NaiveDate>,
}

impl Writer {
    /// A writer of `dir` keeping `retention_days` days of files.
    pub(super) fn new(dir: PathBuf, retention_days: i64) -> Self {
        Self {
            dir,
            retention_days,
            open: None,
            cleaned_on: None,
        }
    }

    /// Handles commands until every sender is gone.
    pub(super) fn run(mut self, commands: &Receiver<Command>) {
        for command in commands {
            match command {
                Command::Append(event) => {
                    if let Err(e) = self.append(&event) {
                        tracing::warn!(dir = %self.dir.display(), error = %e, "cannot append to the event log");
                        self.open = None;
                    }
                }
                Command::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    /// Appends one event as one line of its day's file, after removing expired files when
    /// the day changed since the last removal.
    fn append(&mut self, event: &Event) -> io::Result<()> {
        let today = Utc::now().date_naive();
        if self.cleaned_on != Some(today) {
            self.cleaned_on = Some(today);
            let oldest_kept = today - TimeDelta::days(self.retention_days);
            if let Err(e) = files::remove_before(&self.dir, oldest_kept) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove expired event logs");
            }
        }
        let mut line = serde_json::to_string(event).map_err(io::Error::other)?;
        line.push('\n');
        let date = event.timestamp.date_naive();
        let file = match &mut self.open {
            Some((open_date, file)) if *open_date == date => file,
            slot => {
                fs::create_dir_all(&self.dir)?;
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(files::path_for(&self.dir, date))?;
                &mut slot.insert((date, file)).1
            }
        };
        // One write per line: appends of whole lines never interleave.
        file.write_all(line.as_bytes())
    }
}
