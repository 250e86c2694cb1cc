//! The timeline file (`.hgt`), written as the recording goes: the header and what is measured
//! first, then one `samples` chunk per sample and one `event` chunk per event, each handed to
//! the kernel at once, so that a crash of the recorder (or of the recorded process, which may
//! take the recorder with it in an OOM kill) loses at most the sample being taken. There is no
//! fsync per sample: the kernel keeps what was written even when the writer dies.

use super::Sample;
use heapgraph_format::{
    Chunk, Error, EventChunk, Header, KIND_TIMELINE, NOT_MEASURED, SampleColumns,
    TimelineInfoChunk, Writer,
};
use std::fs::File;
use std::path::Path;

/// The `source_format` of the header of what the recorder writes.
pub const SOURCE_FORMAT: &str = "heapgraph-record";

/// Writes a timeline as it is recorded.
pub struct TimelineWriter {
    writer: Option<Writer<File>>,
    gpus: usize,
    /// Reused column buffers: a sample costs no allocation.
    gpu_process: Vec<u64>,
    gpu_used: Vec<u64>,
}

impl TimelineWriter {
    /// Creates `path` and writes the header and `info`.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(
        path: &Path,
        header: &Header,
        info: TimelineInfoChunk,
    ) -> Result<TimelineWriter, Error> {
        let file = File::create(path).map_err(|source| Error::Io {
            record: 0,
            offset: 0,
            source,
        })?;
        debug_assert_eq!(header.kind, KIND_TIMELINE);
        let gpus = info.gpus.len();
        let mut writer = Writer::new(file, header)?;
        writer.write_chunk(&Chunk::TimelineInfo(info))?;
        writer.flush()?;
        Ok(TimelineWriter {
            writer: Some(writer),
            gpus,
            gpu_process: Vec::with_capacity(gpus),
            gpu_used: Vec::with_capacity(gpus),
        })
    }

    fn writer(&mut self) -> Result<&mut Writer<File>, Error> {
        self.writer.as_mut().ok_or_else(|| Error::Io {
            record: 0,
            offset: 0,
            source: std::io::Error::other("the timeline is already finished"),
        })
    }

    /// Writes one sample and flushes it to the file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn sample(&mut self, sample: &Sample) -> Result<(), Error> {
        let none = |value: Option<u64>| value.unwrap_or(NOT_MEASURED);
        self.gpu_process.clear();
        self.gpu_used.clear();
        for index in 0..self.gpus {
            let reading = sample.gpus.get(index).copied().unwrap_or_default();
            self.gpu_process.push(none(reading.process));
            self.gpu_used.push(none(reading.used));
        }
        let (gpu_process, gpu_used) = (
            std::mem::take(&mut self.gpu_process),
            std::mem::take(&mut self.gpu_used),
        );
        let columns = SampleColumns {
            t_ms: &[sample.t_ms],
            rss: &[sample.rss],
            pss: &[none(sample.pss)],
            uss: &[none(sample.uss)],
            swap: &[none(sample.swap)],
            processes: &[sample.processes],
            cgroup_current: &[none(sample.cgroup_current)],
            system_available: &[none(sample.system_available)],
            gpu_process: &gpu_process,
            gpu_used: &gpu_used,
        };
        let writer = self.writer()?;
        let written = writer.write_samples(&columns).and_then(|()| writer.flush());
        self.gpu_process = gpu_process;
        self.gpu_used = gpu_used;
        written
    }

    /// Writes one event and flushes it to the file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn event(&mut self, event: EventChunk) -> Result<(), Error> {
        let writer = self.writer()?;
        writer.write_chunk(&Chunk::Event(event))?;
        writer.flush()
    }

    /// Writes the end record: the recording is complete.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(&mut self) -> Result<(), Error> {
        match self.writer.take() {
            Some(writer) => writer.finish().map(drop),
            None => Ok(()),
        }
    }
}
