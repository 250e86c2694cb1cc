//! What Linux's `/proc` and cgroup files say about a process tree's memory, read cheaply:
//! `status` (kernel counters, O(1) to read) at every sample, `smaps_rollup` (a page-table walk
//! that holds the target's mmap lock) only as often as its cost allows.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Bytes per kibibyte, the unit of `/proc`'s memory fields.
const KIB: u64 = 1024;

/// Memory fields of `/proc/PID/status`, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// `VmRSS`.
    pub rss: u64,
    /// `VmSwap`.
    pub swap: u64,
    /// `PPid`.
    pub parent: u32,
    /// `SigCgt`: the signals the process catches, bit `n - 1` for signal `n`.
    pub caught_signals: u64,
    /// The last `NSpid` entry: the pid as the process itself sees it (inside its namespace).
    pub own_pid: u32,
    /// The `Uid` (real).
    pub uid: u32,
    /// Whether the process has ended, or is ending: it waits to be reaped (`State: Z`, or
    /// `X`), or its memory is already gone (no `VmRSS` line, as while it exits; kernel threads
    /// have none either). It holds no memory any more.
    pub ended: bool,
}

impl Status {
    /// Whether the process has a handler for `signal`.
    pub fn catches(&self, signal: i32) -> bool {
        (1..=64).contains(&signal) && self.caught_signals & (1u64 << (signal - 1)) != 0
    }
}

/// A `kB` field's value in bytes.
fn kib_field(value: &str) -> Option<u64> {
    let number = value.trim().strip_suffix("kB").unwrap_or(value).trim();
    number.parse::<u64>().ok().map(|kib| kib * KIB)
}

/// Parses the text of `/proc/PID/status`. Fields that are missing (a kernel thread has no
/// `VmRSS`) stay 0.
pub fn parse_status(text: &str) -> Status {
    let mut status = Status::default();
    let mut has_memory = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key {
            "VmRSS" => {
                status.rss = kib_field(value).unwrap_or(0);
                has_memory = true;
            }
            "VmSwap" => status.swap = kib_field(value).unwrap_or(0),
            "PPid" => status.parent = value.trim().parse().unwrap_or(0),
            "State" => status.ended = matches!(value.trim().chars().next(), Some('Z' | 'X')),
            "SigCgt" => status.caught_signals = u64::from_str_radix(value.trim(), 16).unwrap_or(0),
            "NSpid" => {
                status.own_pid = value
                    .split_whitespace()
                    .last()
                    .and_then(|pid| pid.parse().ok())
                    .unwrap_or(0);
            }
            "Uid" => {
                status.uid = value
                    .split_whitespace()
                    .next()
                    .and_then(|uid| uid.parse().ok())
                    .unwrap_or(0);
            }
            _ => {}
        }
    }
    status.ended |= !has_memory;
    status
}

/// Memory fields of `/proc/PID/smaps_rollup`, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollup {
    /// `Pss`: each page divided among the processes that map it.
    pub pss: u64,
    /// `Private_Clean` + `Private_Dirty`: pages no other process maps (the unique set).
    pub uss: u64,
    /// `Swap`.
    pub swap: u64,
}

/// Parses the text of `/proc/PID/smaps_rollup`; `None` when it has no `Pss` line.
pub fn parse_rollup(text: &str) -> Option<Rollup> {
    let mut rollup = Rollup::default();
    let mut has_pss = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Some(bytes) = kib_field(value) else {
            continue;
        };
        match key {
            "Pss" => {
                rollup.pss = bytes;
                has_pss = true;
            }
            "Private_Clean" | "Private_Dirty" => rollup.uss += bytes,
            "Swap" => rollup.swap = bytes,
            _ => {}
        }
    }
    has_pss.then_some(rollup)
}

/// `MemTotal` and `MemAvailable` of `/proc/meminfo`, in bytes.
pub fn parse_meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let (mut total, mut available) = (None, None);
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("MemTotal:") {
            total = kib_field(value);
        } else if let Some(value) = line.strip_prefix("MemAvailable:") {
            available = kib_field(value);
        }
    }
    (total, available)
}

/// Reads `/proc/PID/status`.
///
/// # Errors
/// The I/O error: `NotFound` once the process has ended.
pub fn status(pid: u32) -> io::Result<Status> {
    fs::read_to_string(format!("/proc/{pid}/status")).map(|text| parse_status(&text))
}

/// Reads `/proc/PID/smaps_rollup`; `Ok(None)` when the kernel has none (before Linux 4.14).
///
/// # Errors
/// The I/O error (another user's process cannot be read without privileges).
pub fn rollup(pid: u32) -> io::Result<Option<Rollup>> {
    match fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        Ok(text) => Ok(parse_rollup(&text)),
        Err(err)
            if err.kind() == io::ErrorKind::NotFound
                && Path::new(&format!("/proc/{pid}")).exists() =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// The processes of the tree under `root`, `root` first, by scanning every `/proc/PID/stat`
/// for parents (no `children` file is needed: it exists only with `CONFIG_PROC_CHILDREN`).
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat"))
                && let Some(parent) = parent_in_stat(&stat)
            {
                parent_of.push((parent, pid));
            }
        }
    }
    parent_of.sort_unstable();
    let mut tree = vec![root];
    let mut seen = BTreeSet::from([root]);
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next];
        next += 1;
        let start = parent_of.partition_point(|&(p, _)| p < parent);
        for &(_, child) in parent_of[start..].iter().take_while(|&&(p, _)| p == parent) {
            if seen.insert(child) {
                tree.push(child);
            }
        }
    }
    tree
}

/// The parent pid in the text of `/proc/PID/stat`: the fourth field, after the command, which
/// is in parentheses and may itself hold spaces and parentheses.
pub fn parent_in_stat(stat: &str) -> Option<u32> {
    let after_command = &stat[stat.rfind(')')? + 1..];
    after_command.split_whitespace().nth(1)?.parse().ok()
}

/// When the process started, in clock ticks after boot (the 22nd field of `stat`).
pub fn start_ticks_in_stat(stat: &str) -> Option<u64> {
    let after_command = &stat[stat.rfind(')')? + 1..];
    after_command.split_whitespace().nth(19)?.parse().ok()
}

/// The command line of a process, as its arguments.
pub fn command_line(pid: u32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&byte| byte == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The executable of a process.
pub fn executable(pid: u32) -> Option<PathBuf> {
    fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// `/proc/PID/root` when process `pid` has another root directory than this process (it runs
/// in a chroot or a container): its path `/tmp/x` is then `/proc/PID/root/tmp/x` here. `None`
/// when it shares ours.
///
/// # Errors
/// The I/O error of looking at its root: permission denied for another user's process.
pub fn separate_root(pid: u32) -> io::Result<Option<PathBuf>> {
    use std::os::unix::fs::MetadataExt;
    let root = PathBuf::from(format!("/proc/{pid}/root"));
    let theirs = fs::metadata(&root)?;
    let ours = fs::metadata("/")?;
    let same = theirs.dev() == ours.dev() && theirs.ino() == ours.ino();
    Ok((!same).then_some(root))
}

/// A process's memory cgroup: where its usage and limit are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// Where its hierarchy is mounted: the walk for ancestors' limits stops there.
    pub mount: PathBuf,
    /// Version 2 (`memory.current`, `memory.max`) or 1 (`memory.usage_in_bytes`,
    /// `memory.limit_in_bytes`).
    pub v2: bool,
}

/// Values of `memory.limit_in_bytes` at or above this mean "no limit" (cgroup v1 writes
/// `PAGE_COUNTER_MAX` pages, about 2⁶³ bytes).
const V1_UNLIMITED: u64 = 1 << 62;

impl Cgroup {
    /// The memory cgroup of `pid`, found through `/proc/PID/cgroup` and the mount table.
    pub fn of(pid: u32) -> Option<Cgroup> {
        let membership = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
        find_cgroup(&membership, &mounts)
    }

    /// Bytes the cgroup uses now (`memory.current`, or `memory.usage_in_bytes`).
    pub fn current(&self) -> Option<u64> {
        let name = if self.v2 {
            "memory.current"
        } else {
            "memory.usage_in_bytes"
        };
        read_u64(&self.dir.join(name))
    }

    /// Processes the cgroup's OOM killer has killed (`oom_kill` of `memory.events`, or of
    /// `memory.oom_control` in v1), where the kernel counts them.
    pub fn oom_kills(&self) -> Option<u64> {
        let name = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        fs::read_to_string(self.dir.join(name))
            .ok()?
            .lines()
            .find_map(|line| line.strip_prefix("oom_kill ")?.trim().parse().ok())
    }

    /// Bytes the cgroup may still take before its limit: the limit less its working set,
    /// which is what it uses less the file pages the kernel can drop first (`inactive_file`,
    /// as the kubelet counts a container's working set). `None` where no limit is set.
    pub fn available(&self) -> Option<u64> {
        let limit = self.limit()?;
        let current = self.current()?;
        let reclaimable = self.inactive_file().unwrap_or(0);
        Some(limit.saturating_sub(current.saturating_sub(reclaimable)))
    }

    /// `inactive_file` of `memory.stat` (`total_inactive_file` in v1, which counts the
    /// cgroup's descendants too, as its usage does).
    fn inactive_file(&self) -> Option<u64> {
        let key = if self.v2 {
            "inactive_file "
        } else {
            "total_inactive_file "
        };
        fs::read_to_string(self.dir.join("memory.stat"))
            .ok()?
            .lines()
            .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
    }

    /// The tightest limit on the cgroup and its ancestors up to the mount's root, if any.
    pub fn limit(&self) -> Option<u64> {
        let mount_root = self.mount.as_path();
        let name = if self.v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        let mut limit: Option<u64> = None;
        let mut dir = Some(self.dir.as_path());
        while let Some(here) = dir {
            if let Some(value) = read_u64(&here.join(name))
                && (self.v2 || value < V1_UNLIMITED)
            {
                limit = Some(limit.map_or(value, |limit| limit.min(value)));
            }
            if here == mount_root {
                break;
            }
            dir = here
                .parent()
                .filter(|parent| parent.starts_with(mount_root));
        }
        limit
    }
}

/// A number in a cgroup file; `max` (no limit) and unreadable files are `None`.
fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The memory cgroup given the texts of `/proc/PID/cgroup` and `/proc/self/mountinfo`.
pub fn find_cgroup(membership: &str, mountinfo: &str) -> Option<Cgroup> {
    let mut v1_path = None;
    let mut v2_path = None;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            v2_path = Some(path);
        } else if controllers.split(',').any(|c| c == "memory") {
            v1_path = Some(path);
        }
    }
    // A memory controller in v1 wins: on hybrid hosts the v2 hierarchy has no memory files.
    for line in mountinfo.lines() {
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let mut after = after.split_whitespace();
        let fstype = after.next().unwrap_or_default();
        let _source = after.next();
        let options = after.next().unwrap_or_default();
        let fields: Vec<&str> = before.split_whitespace().collect();
        let (Some(&root), Some(&mount_point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let (path, v2) = match (fstype, v1_path, v2_path) {
            ("cgroup", Some(path), _) if options.split(',').any(|o| o == "memory") => (path, false),
            ("cgroup2", None, Some(path)) => (path, true),
            _ => continue,
        };
        // The cgroup path is relative to the hierarchy's root; the mount shows `root` of it.
        let relative = path
            .strip_prefix(root)
            .unwrap_or(path)
            .trim_start_matches('/');
        let mount = PathBuf::from(mount_point);
        let dir = if relative.is_empty() {
            mount.clone()
        } else {
            mount.join(relative)
        };
        return Some(Cgroup { dir, mount, v2 });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_shares_its_own_root() {
        // A process in another root is the Python version tier's case (tests/python_versions).
        assert_eq!(separate_root(std::process::id()).unwrap(), None);
        assert!(separate_root(u32::MAX).is_err());
    }

    // Read off this machine (Linux 6.18, cgroup v1 with a memory controller): the texts are the
    // kernel's own.
    const STATUS: &str = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t16926\n\
        Ngid:\t0\nPid:\t16926\nPPid:\t16901\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\n\
        NSpid:\t16926\nVmPeak:\t    3060 kB\nVmRSS:\t    1752 kB\nRssAnon:\t     116 kB\n\
        VmSwap:\t       8 kB\nSigQ:\t0/96365\nSigCgt:\t0000000000000800\n";
    const ROLLUP: &str = "559712733000-7fff5720a000 ---p 00000000 00:00 0                          [rollup]\n\
        Rss:                1692 kB\nPss:                 529 kB\nPss_Dirty:           112 kB\n\
        Shared_Clean:       1508 kB\nShared_Dirty:          0 kB\nPrivate_Clean:        72 kB\n\
        Private_Dirty:       112 kB\nSwap:                  4 kB\nSwapPss:               0 kB\n";
    const CGROUP_V1: &str =
        "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/3b7b\n1:cpu:/\n0::/\n";
    const MOUNTS_V1: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
    // The unified layout of a systemd host and of a container with a cgroup namespace.
    const CGROUP_V2: &str = "0::/system.slice/serve.service\n";
    const MOUNTS_V2: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status = parse_status(STATUS);
        assert_eq!(status.rss, 1752 * 1024);
        assert_eq!(status.swap, 8 * 1024);
        assert_eq!(status.parent, 16901);
        assert_eq!(status.own_pid, 16926);
        assert_eq!(status.uid, 1000);
        assert!(!status.ended);
        assert!(parse_status("Name:\tpython3\nState:\tZ (zombie)\n").ended);
        // Exiting: still running, but its memory is gone.
        assert!(parse_status("Name:\tpython3\nState:\tR (running)\nPPid:\t1\n").ended);
        // 0x800 is bit 11: signal 12, SIGUSR2.
        assert!(status.catches(12));
        assert!(!status.catches(10));
        assert!(!status.catches(0) && !status.catches(65));
    }

    #[test]
    fn rollup_gives_pss_and_the_unique_set() {
        let rollup = parse_rollup(ROLLUP).unwrap();
        assert_eq!(rollup.pss, 529 * 1024);
        assert_eq!(rollup.uss, (72 + 112) * 1024);
        assert_eq!(rollup.swap, 4 * 1024);
        assert_eq!(parse_rollup("Rss: 4 kB\n"), None);
    }

    #[test]
    fn meminfo_gives_total_and_available() {
        let text = "MemTotal:       24684084 kB\nMemFree:        22080836 kB\nMemAvailable:   24245176 kB\n";
        assert_eq!(
            parse_meminfo(text),
            (Some(24_684_084 * 1024), Some(24_245_176 * 1024))
        );
    }

    #[test]
    fn stat_fields_survive_commands_with_spaces_and_parentheses() {
        let stat = "4242 (my (odd) cmd) S 17 4242 17 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 50";
        assert_eq!(parent_in_stat(stat), Some(17));
        assert_eq!(start_ticks_in_stat(stat), Some(987_654));
    }

    #[test]
    fn cgroups_are_found_in_v1_and_v2_layouts() {
        let v1 = find_cgroup(CGROUP_V1, MOUNTS_V1).unwrap();
        assert_eq!(
            v1.dir,
            PathBuf::from("/sys/fs/cgroup/memory/process_api/3b7b")
        );
        assert!(!v1.v2);
        assert_eq!(v1.mount, PathBuf::from("/sys/fs/cgroup/memory"));
        let v2 = find_cgroup(CGROUP_V2, MOUNTS_V2).unwrap();
        assert_eq!(
            v2.dir,
            PathBuf::from("/sys/fs/cgroup/system.slice/serve.service")
        );
        assert!(v2.v2);
        // Inside a container's namespace the process sits at the root of its hierarchy.
        let root = find_cgroup("0::/\n", MOUNTS_V2).unwrap();
        assert_eq!(root.dir, PathBuf::from("/sys/fs/cgroup"));
    }

    #[test]
    fn a_cgroup_has_its_limit_less_its_working_set_available() {
        // A container's cgroup under a parent with the tighter limit; `memory.stat` as this
        // machine's v1 kernel writes it (cut to the lines around the one read), and v2's.
        let mount = std::env::temp_dir().join(format!("heapgraph-cgroup-{}", std::process::id()));
        let dir = mount.join("pod");
        fs::create_dir_all(&dir).unwrap();
        let write = |path: &Path, text: &str| fs::write(path, text).unwrap();
        write(&mount.join("memory.limit_in_bytes"), "10737418240\n");
        write(&dir.join("memory.limit_in_bytes"), "9223372036854771712\n");
        write(&dir.join("memory.usage_in_bytes"), "4294967296\n");
        write(
            &dir.join("memory.stat"),
            "cache 832851968\nrss 1121570816\ninactive_file 658558976\nactive_file 174292992\n\
             hierarchical_memory_limit 9223372036854771712\ntotal_cache 832851968\n\
             total_inactive_file 1073741824\ntotal_active_file 174292992\n",
        );
        let v1 = Cgroup {
            dir: dir.clone(),
            mount: mount.clone(),
            v2: false,
        };
        // 10 GiB less (4 GiB used less the 1 GiB of inactive file pages).
        assert_eq!(v1.available(), Some(7 << 30));
        write(&dir.join("memory.max"), "max\n");
        write(&mount.join("memory.max"), "8589934592\n");
        write(&dir.join("memory.current"), "10737418240\n");
        write(
            &dir.join("memory.stat"),
            "anon 1048576\nfile 2097152\ninactive_file 1073741824\n",
        );
        let v2 = Cgroup {
            dir: dir.clone(),
            mount: mount.clone(),
            v2: true,
        };
        // Past the limit once the file pages are counted: nothing left, not an underflow.
        assert_eq!(v2.available(), Some(0));
        write(&dir.join("memory.current"), "2147483648\n");
        assert_eq!(v2.available(), Some(7 << 30));
        fs::remove_file(mount.join("memory.max")).unwrap();
        assert_eq!(v2.available(), None, "no limit anywhere");
        fs::remove_dir_all(&mount).unwrap();
    }

    #[test]
    fn this_process_reads_as_a_tree_of_one_with_memory() {
        let me = std::process::id();
        let status = status(me).unwrap();
        assert!(status.rss > 0);
        let tree = process_tree(me);
        assert_eq!(tree[0], me);
        if let Ok(Some(rollup)) = rollup(me) {
            // PSS is at most RSS at one instant; the other tests' threads allocate between the
            // reads, so compare with the larger of the RSS read before and after.
            let after = super::status(me).unwrap().rss;
            assert!(rollup.pss > 0, "{rollup:?}");
            assert!(
                rollup.pss <= status.rss.max(after),
                "{rollup:?}, rss {} then {after}",
                status.rss
            );
        }
    }
}
