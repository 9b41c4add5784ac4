// Package hostlist writes and reads Slurm hostlist expressions: "gpu[01-04,07]",
// "a[1-2],b3". Compress folds a set of host names into the shortest expression Slurm
// reads back as the same set; Expand reads one back.
//
// Slurm's rules, which both follow: a name's numeric suffix is its trailing run of
// digits and everything before it is the prefix; names with the same prefix share a
// bracket; a zero-padded number ("007") keeps its width, and an unpadded number fits
// a range of any width not larger than its own digit count (node[01-100] holds
// node01 and node100, as scontrol prints it). A bracket with one number is written
// without brackets ("gpu7"); a run of two or more consecutive numbers is "lo-hi".
// Compress leaves names whose trailing digits are longer than 9 whole: those are
// GUID-derived switch and HCA names, not node numbers.
package hostlist
