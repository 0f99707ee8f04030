package main

import "fmt"

// fsMagic maps statfs f_type values (linux/magic.h and the filesystems'
// own headers) to names. The filesystem of the data directory decides what
// a cold-cache run can mean: tmpfs and ramfs keep their pages in the page
// cache by design, network and FUSE filesystems have a cache of their own.
var fsMagic = map[int64]string{
	0xEF53:     "ext4", // ext2/ext3/ext4 share one magic
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x858458F6: "ramfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0xF2F52010: "f2fs",
	0xCA451A4E: "bcachefs",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x00C36400: "ceph",
	0x65735546: "fuse",
	0x01021997: "9p",
	0x73717368: "squashfs",
	0xE0F5E1E2: "erofs",
	0x4D44:     "vfat",
	0x2011BAB0: "exfat",
	0x5346544E: "ntfs",
	0x52654973: "reiserfs",
	0x3153464A: "jfs",
	0x01161970: "gfs2",
	0x5346414F: "afs",
	0x9FA0:     "proc",
	0x62656572: "sysfs",
	0x1373:     "devfs",
	0x27E0EB:   "cgroup",
	0x63677270: "cgroup2",
	0x4244:     "hfs",
	0x482B:     "hfsplus",
	0x9660:     "iso9660",
	0xF15F:     "ecryptfs",
	0x6E736673: "nsfs",
	0x5A3C69F0: "aufs",
}

// fsName names a statfs f_type, falling back to the hex magic so that an
// unknown filesystem is still identifiable from the report.
func fsName(magic int64) string {
	// f_type is a signed long on some architectures: magics with the top bit
	// set (btrfs, cifs, ...) arrive negative when widened from 32 bits.
	if magic < 0 {
		magic &= 0xFFFFFFFF
	}
	if n, ok := fsMagic[magic]; ok {
		return n
	}
	return fmt.Sprintf("unknown (f_type 0x%X)", magic)
}

// volatileFS lists the filesystems whose pages cannot be evicted to disk:
// on them a "cold" run is impossible and the report says so.
func volatileFS(name string) bool {
	return name == "tmpfs" || name == "ramfs"
}
