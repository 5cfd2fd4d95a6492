//! The writer thread of the event log: appends queued events to the day's file, rotates it
//! when it reaches its size, and removes expired and surplus files.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;

use chrono::{NaiveDate, TimeDelta, Utc};
use muster_core::Event;
use muster_core::text::truncate_in_place;
use tokio::sync::oneshot;

use super::{EventLogOptions, files};

/// What the log asks its writer to do.
#[derive(Debug)]
pub(super) enum Command {
    /// Append this event.
    Append(Box<Event>),
    /// Answer once everything queued before has been written.
    Flush(oneshot::Sender<()>),
}

/// The open file of the current day.
#[derive(Debug)]
struct Open {
    date: NaiveDate,
    file: File,
    /// Its length.
    bytes: u64,
}

/// The writer's state: the open file of the current day and the last cleanup.
#[derive(Debug)]
pub(super) struct Writer {
    dir: PathBuf,
    options: EventLogOptions,
    open: Option<Open>,
    cleaned_on: Option<NaiveDate>,
}

impl Writer {
    /// A writer of `dir`.
    pub(super) fn new(dir: PathBuf, options: EventLogOptions) -> Self {
        Self {
            dir,
            options,
            open: None,
            cleaned_on: None,
        }
    }

    /// Handles commands until every sender is gone.
    pub(super) fn run(mut self, commands: &Receiver<Command>) {
        for command in commands {
            match command {
                Command::Append(mut event) => {
                    if let Err(e) = self.append(&mut event) {
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
    /// the day changed since the last removal, and rotating the file when the line would
    /// take it over its size.
    fn append(&mut self, event: &mut Event) -> io::Result<()> {
        let today = Utc::now().date_naive();
        if self.cleaned_on != Some(today) {
            self.cleaned_on = Some(today);
            let oldest_kept = today - TimeDelta::days(self.options.retention_days);
            if let Err(e) = files::remove_before(&self.dir, oldest_kept) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove expired event logs");
            }
        }
        truncate_in_place(&mut event.message, self.options.max_message_bytes);
        let mut line = serde_json::to_string(event).map_err(io::Error::other)?;
        line.push('\n');
        let date = event.timestamp.date_naive();
        if self.open.as_ref().is_some_and(|o| o.date != date) {
            self.open = None;
        }
        if self.open.as_ref().is_some_and(|o| {
            o.bytes > 0 && o.bytes + line.len() as u64 > self.options.max_file_bytes
        }) {
            self.rotate(date)?;
        }
        let open = match &mut self.open {
            Some(open) => open,
            slot => {
                fs::create_dir_all(&self.dir)?;
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(files::path_for(&self.dir, date))?;
                let bytes = file.metadata()?.len();
                slot.insert(Open { date, file, bytes })
            }
        };
        // One write per line: appends of whole lines never interleave.
        let path = files::path_for(&self.dir, date);
        if let Err(e) = crate::atomic::writer_for(&path).write(&mut open.file, line.as_bytes()) {
            // A line half written (the disk is full) would spoil the next one: cut it off.
            let _ = open.file.set_len(open.bytes);
            return Err(e);
        }
        open.bytes += line.len() as u64;
        Ok(())
    }

    /// Moves the current file of `date` aside under the next sequence number and removes the
    /// oldest files beyond the bound.
    fn rotate(&mut self, date: NaiveDate) -> io::Result<()> {
        self.open = None;
        let next = files::log_files(&self.dir)?
            .iter()
            .filter(|f| f.date == date && !f.is_current())
            .map(|f| f.seq)
            .max()
            .unwrap_or(0)
            + 1;
        let current = files::path_for(&self.dir, date);
        fs::rename(&current, files::rotated_path(&self.dir, date, next))?;
        // The new current file is created by the append; it counts as one.
        let keep = self.options.max_files.saturating_sub(1).max(1);
        files::remove_oldest_beyond(&self.dir, keep, &current)?;
        Ok(())
    }
}
