//! Unit tests of the advice (what to try first, for each bottleneck).

use super::*;

fn time(parts: &[(Part, f64)]) -> Split {
    let mut t = Split::default();
    for (p, v) in parts {
        t.add(*p, *v);
    }
    t.shares().unwrap()
}

fn situation<'a>(command: &'a str, position: Position, parts: &[(Part, f64)]) -> Situation<'a> {
    Situation {
        command,
        position,
        time: time(parts),
        cores: 2,
        idle_cores: Some(1.0),
        busy_stages: 1,
        short_of_cpu: false,
        looping: false,
        launcher: false,
        peer: None,
        pid: 1234,
        rate: None,
        thief: None,
        group: 0,
    }
}

/// Every rule of the table has its test below; a rule added without one fails here.
#[test]
fn every_rule_is_tested() {
    let tested = [
        "shell loop",
        "short of CPU",
        "launcher",
        "rate limit",
        "disk",
        "network",
        "ssh cipher",
        "parallel compressor",
        "slow producer or consumer",
    ];
    let names: Vec<&str> = RULES.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, tested);
}

#[test]
fn short_of_cpu_only_when_the_bottleneck_itself_waits_for_a_cpu() {
    let mut s = situation(
        "sha256sum",
        Position::Last,
        &[
            (Part::Busy, 40.0),
            (Part::Starved, 55.0),
            (Part::Input, 5.0),
        ],
    );
    s.short_of_cpu = true;
    s.busy_stages = 3;
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the machine is short of CPU: sha256sum waits for a CPU 55% of the time and \
             runs 40% (3 busy stages on 2 cores, with the other programs running)"
        )
    );
    s.busy_stages = 1;
    s.cores = 1;
    assert!(advise(&s, &Tools::default())
        .unwrap()
        .contains("(1 busy stage on 1 core,"));
    // Never "0 busy stages".
    s.busy_stages = 0;
    assert!(advise(&s, &Tools::default()).unwrap().ends_with("runs 40%"));
    // D4: a rate limit starved 30% of the time on a loaded machine keeps its advice.
    let mut s = situation(
        "rpv -qL 10m",
        Position::Middle,
        &[
            (Part::Busy, 2.0),
            (Part::Starved, 28.0),
            (Part::Timer, 70.0),
        ],
    );
    s.short_of_cpu = true;
    s.busy_stages = 0;
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "raise its rate limit to go faster: rpv -R 1234 -L 20m (rpv -qL 10m is held \
             back by -L 10m)"
        )
    );
    // Waiting for a CPU longer than on its timer, but moving data at its limit: the
    // limit holds it back (the CPU wait uses the slack between its bursts). Below 9/10
    // of its limit, the CPU is the cause.
    let mut s = situation(
        "rpv -q -L 10M",
        Position::Middle,
        &[(Part::Starved, 67.0), (Part::Timer, 33.0)],
    );
    s.short_of_cpu = true;
    s.rate = Some(10.0 * 1048576.0 * 0.97);
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "raise its rate limit to go faster: rpv -R 1234 -L 20M (rpv -q -L 10M is held \
             back by -L 10M)"
        )
    );
    s.rate = Some(10.0 * 1048576.0 * 0.8);
    assert!(advise(&s, &Tools::default())
        .is_some_and(|a| a.starts_with("the machine is short of CPU: rpv -q -L 10M waits")));
    s.rate = None;
    assert!(advise(&s, &Tools::default())
        .is_some_and(|a| a.starts_with("the machine is short of CPU: ")));
    assert_eq!(limit_bytes("1.5g"), Some(1.5 * 1073741824.0));
    assert_eq!(limit_bytes("512k"), Some(524288.0));
    assert_eq!(limit_bytes("4096"), Some(4096.0));
    assert_eq!(limit_bytes("4X"), None);
    // A bottleneck that runs more than it waits for a CPU: no CPU advice, whatever the
    // other stages do.
    let mut s = situation(
        "sha256sum",
        Position::Last,
        &[
            (Part::Busy, 70.0),
            (Part::Starved, 28.0),
            (Part::Input, 2.0),
        ],
    );
    s.short_of_cpu = true;
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the consumer is the slowest stage: sha256sum (busy 70%, waiting for a CPU 28% \
             of the time); the others wait for it"
        )
    );
}

#[test]
fn a_rate_limit_names_the_limit() {
    let parts = [(Part::Busy, 2.0), (Part::Timer, 98.0)];
    for (command, value, paste) in [
        ("rpv -q -L 4M", "4M", "rpv -R 1234 -L 8M"),
        ("rpv -qL4M", "4M", "rpv -R 1234 -L 8M"),
        ("pv -q --rate-limit=10m", "10m", "pv -R 1234 -L 20m"),
        ("pv --rate-limit 1G -q", "1G", "pv -R 1234 -L 2G"),
        ("rpv -qL 2.5M", "2.5M", "rpv -R 1234 -L 5M"),
        ("rpv -qL 1.5k", "1.5k", "rpv -R 1234 -L 3k"),
        ("rpv -qL 0.3M", "0.3M", "rpv -R 1234 -L 0.6M"),
    ] {
        let s = situation(command, Position::Middle, &parts);
        assert_eq!(
            advise(&s, &Tools::default()),
            Some(format!(
                "raise its rate limit to go faster: {paste} ({command} is held back by -L \
                 {value})"
            )),
            "{command}"
        );
    }
    // Another program sleeping on a timer paces itself.
    let s = situation("perl -e sleepy", Position::Last, &parts);
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "perl -e sleepy sleeps on a timer 98% of the time: it paces itself (a rate \
             limit or a pause)"
        )
    );
}

#[test]
fn the_disk_or_the_network() {
    let s = situation(
        "tar cf - /srv",
        Position::First,
        &[(Part::Busy, 10.0), (Part::Disk, 85.0), (Part::Output, 5.0)],
    );
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some("tar cf - /srv waits for the disk 85% of the time: the disk is the limit")
    );
    let s = situation(
        "curl -s https://example.org/big",
        Position::First,
        &[(Part::Busy, 5.0), (Part::Network, 95.0)],
    );
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the network is the limit: curl -s https://example.org/big waits on the \
             network 95% of the time"
        )
    );
    let mut s = situation(
        "python3 -c send",
        Position::Last,
        &[(Part::Busy, 5.0), (Part::Network, 95.0)],
    );
    s.peer = Some("127.0.0.1:9000");
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the network or the peer (127.0.0.1:9000) is the limit: python3 -c send waits \
             on its socket 95% of the time"
        )
    );
    let s = situation(
        "ssh -p 2222 -i key nas cat > x",
        Position::Last,
        &[(Part::Busy, 5.0), (Part::Network, 95.0)],
    );
    assert!(advise(&s, &Tools::default())
        .unwrap()
        .starts_with("the network or the remote end (ssh nas) is the limit: "));
}

#[test]
fn a_compressor_on_one_core_gets_its_parallel_counterpart_if_installed() {
    let busy = [(Part::Busy, 97.0), (Part::Input, 3.0)];
    let all = Tools::of(&["pigz", "pbzip2", "lbzip2", "xz", "zstd", "plzip"]);
    for (command, paste) in [
        ("gzip -9", "pigz -p 2"),
        ("bzip2 -c", "pbzip2 -p2"),
        ("xz -6", "xz -T0"),
        ("zstd -19", "zstd -T0"),
        ("lzip", "plzip -n 2"),
    ] {
        let s = situation(command, Position::Middle, &busy);
        assert_eq!(
            advise(&s, &all),
            Some(format!(
                "try {paste}: {command} uses a whole core while 1 of 2 cores is idle"
            )),
            "{command}"
        );
    }
    // Only installed tools are named: lbzip2 when pbzip2 is missing; none, no advice.
    let s = situation("bzip2", Position::Middle, &busy);
    assert!(advise(&s, &Tools::of(&["lbzip2"]))
        .unwrap()
        .starts_with("try lbzip2 -n 2: bzip2 uses"));
    assert_eq!(advise(&s, &Tools::default()), None);
    // Already threaded, no idle core, or not using a whole core: no advice.
    let s = situation("xz -T0 -6", Position::Middle, &busy);
    assert_eq!(advise(&s, &all), None);
    let mut s = situation("gzip", Position::Middle, &busy);
    s.idle_cores = Some(0.2);
    assert_eq!(advise(&s, &all), None);
    s.idle_cores = None;
    assert_eq!(advise(&s, &all), None);
    let s = situation(
        "gzip",
        Position::Middle,
        &[(Part::Busy, 60.0), (Part::Input, 40.0)],
    );
    assert_eq!(advise(&s, &all), None);
    // Three idle cores of four.
    let mut s = situation("gzip", Position::Middle, &busy);
    s.cores = 4;
    s.idle_cores = Some(2.8);
    assert_eq!(
        advise(&s, &all).as_deref(),
        Some("try pigz -p 4: gzip uses a whole core while 3 of 4 cores are idle")
    );
}

#[test]
fn a_slow_producer_or_consumer_is_named() {
    let busy = [(Part::Busy, 98.0), (Part::Input, 2.0)];
    let s = situation("sha256sum", Position::Last, &busy);
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the consumer is the slowest stage: sha256sum (busy 98% of the time); the \
             others wait for it"
        )
    );
    let s = situation(
        "ssh host cat f",
        Position::First,
        &[(Part::Busy, 5.0), (Part::Other, 95.0)],
    );
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the producer is the slowest stage: ssh host cat f (on its own 100% of the \
             time); the others wait for it"
        )
    );
    // A producer reading a slow FIFO; a consumer writing to a slow reader.
    let s = situation(
        "cat fifo",
        Position::First,
        &[(Part::Input, 99.0), (Part::Busy, 1.0)],
    );
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "the producer is the slowest stage: cat fifo (waiting for its own input 99% \
             of the time); the others wait for it"
        )
    );
    let s = situation(
        "nc host 9",
        Position::Last,
        &[(Part::Output, 90.0), (Part::Busy, 10.0)],
    );
    assert!(advise(&s, &Tools::default())
        .unwrap()
        .contains("(waiting to write its output 90% of the time)"));
    // A middle stage that is neither a compressor nor waiting on something: no advice.
    let s = situation("sed s/a/b/", Position::Middle, &busy);
    assert_eq!(advise(&s, &Tools::default()), None);
}

#[test]
fn a_shell_loop_is_the_slow_producer_or_consumer() {
    let mut s = situation(
        "(loop) sleep",
        Position::Last,
        &[(Part::Busy, 15.0), (Part::Timer, 80.0), (Part::Input, 5.0)],
    );
    s.looping = true;
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "slow consumer: the shell loop (loop) sleep is the consumer the others wait \
             for (sleeping 80% of the time)"
        )
    );
    let mut s = situation(
        "(loop) grep, cut",
        Position::First,
        &[
            (Part::Busy, 55.0),
            (Part::Starved, 25.0),
            (Part::Output, 20.0),
        ],
    );
    s.looping = true;
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "slow producer: the shell loop (loop) grep, cut is the producer the others \
             wait for (on a CPU or waiting for one 80% of the time): one program for the \
             whole stream (awk, sed, xargs) starts fewer processes"
        )
    );
    // Not a loop: the rate-limit advice as before.
    s.looping = false;
    s.time = time(&[(Part::Timer, 90.0), (Part::Busy, 10.0)]);
    assert!(advise(&s, &Tools::default())
        .unwrap()
        .contains("sleeps on a timer"));
}

#[test]
fn ssh_busy_gets_a_faster_cipher() {
    let s = situation(
        "ssh nas cat > /dev/null",
        Position::Last,
        &[
            (Part::Busy, 80.0),
            (Part::Starved, 10.0),
            (Part::Input, 10.0),
        ],
    );
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "try a faster cipher (ssh -c aes128-gcm@openssh.com nas), and no compression: \
             ssh nas cat > /dev/null is on a CPU or waiting for one 90% of the time \
             (encryption)"
        )
    );
    let s = situation(
        "ssh -C backup@nas tar xf -",
        Position::Last,
        &[(Part::Busy, 95.0), (Part::Input, 5.0)],
    );
    assert!(advise(&s, &Tools::default())
        .unwrap()
        .starts_with("try compression off (ssh -o Compression=no backup@nas)"));
    assert_eq!(
        ssh_host("ssh -vp22 -o BatchMode=yes -- host ls"),
        Some("host")
    );
    assert_eq!(ssh_host("ssh -l me -4 h"), Some("h"));
    assert_eq!(ssh_host("ssh -v"), None);
}

#[test]
fn long_commands_are_cut() {
    let long = "perl -e while(sysread(STDIN,$b,65536)){select(undef,undef,undef,0.01)}";
    let s = situation(long, Position::Last, &[(Part::Timer, 100.0)]);
    let text = advise(&s, &Tools::default()).unwrap();
    assert!(
        text.starts_with("perl -e while(sysread(STDIN,$b,… sleeps on a timer"),
        "{text}"
    );
}

#[test]
fn tools_are_found_on_the_path() {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (name, mode) in [("pigz", 0o755), ("lbzip2", 0o644)] {
        let path = dir.path().join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let path = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).unwrap();
    assert_eq!(Tools::from_path(Some(&path)), Tools::of(&["pigz"]));
    assert_eq!(Tools::from_path(None), Tools::default());
}

#[test]
fn xargs_and_parallel_get_advice_that_fits_a_launcher() {
    let busy = [(Part::Busy, 90.0), (Part::Input, 10.0)];
    let mut s = situation("xargs -n 50 md5sum", Position::Middle, &busy);
    s.launcher = true;
    // A core idle: more commands at once.
    assert_eq!(
        advise(&s, &Tools::default()).as_deref(),
        Some(
            "run 2 commands at once on the idle cores: xargs -P 2 -n 50 md5sum (it is on a CPU \
             or waiting for one 90% of the time; 1 of 2 cores idle)"
        )
    );
    // No core idle: fewer, longer commands.
    s.idle_cores = Some(0.0);
    let advice = advise(&s, &Tools::default()).unwrap();
    assert!(
        advice.starts_with("a larger -n starts fewer processes"),
        "{advice}"
    );
    assert!(!advice.contains("loop"), "{advice}");
    // -P already given and no -n: no suggestion of either.
    let mut p = situation("xargs -P 2 md5sum", Position::Middle, &busy);
    p.launcher = true;
    let advice = advise(&p, &Tools::default()).unwrap();
    assert_eq!(
        advice,
        "slow stage: xargs -P 2 md5sum and the commands it starts are on a CPU or waiting for \
         one 90% of the time"
    );
    // Children waiting for the disk: the disk.
    let mut d = situation(
        "xargs -n 50 md5sum",
        Position::Middle,
        &[(Part::Busy, 20.0), (Part::Disk, 70.0), (Part::Input, 10.0)],
    );
    d.launcher = true;
    assert_eq!(
        advise(&d, &Tools::default()).as_deref(),
        Some(
            "the disk is the limit: the children of xargs -n 50 md5sum wait for it 70% of the time"
        )
    );
    // GNU parallel through perl: -j, after the script's name.
    let mut g = situation("perl /usr/bin/parallel gzip -9", Position::Middle, &busy);
    g.launcher = true;
    let advice = advise(&g, &Tools::default()).unwrap();
    assert!(
        advice.starts_with(
            "run 2 commands at once on the idle cores: perl /usr/bin/parallel -j 2 gzip -9"
        ),
        "{advice}"
    );
}
