// Package ibnet reads the output of ibnetdiscover (infiniband-diags): the
// InfiniBand fabric as switches, channel adapters (CAs, the hosts' HCAs) and the
// links between their ports.
//
// Two formats are read, told apart by their first meaningful line:
//
//   - the default topology file, node blocks separated by blank lines:
//
//     switchguid=0x8f10500200b50(8f10500200b50)
//     Switch	36 "S-0008f10500200b50"		# "Voltaire 4036" enhanced port 0 lid 9 lmc 0
//     [4]	"H-003048c749cd0000"[1](3048c749cd0001) 		# "MT25408 ConnectX" lid 72 4xDDR
//
//     caguid=0x2c90300080d28
//     Ca	1 "H-0002c90300080d28"		# "node17 HCA-1"
//     [1](2c90300080d29) 	"S-0008f10500108bba"[28]		# lid 4 lmc 0 "Voltaire 4036" lid 7 4xQDR
//
//   - the port report of ibnetdiscover -p, one port a line:
//
//     CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
//     SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'
//
// Lines the parser does not know are errors naming file:line when they sit inside a
// node block, and warnings (Fabric.Warnings, also file:line) between blocks, where
// ibnetdiscover's own diagnostics and chassis headers end up when stderr was
// captured with the dump.
package ibnet
