package xidcat

import (
	"strings"
	"testing"
)

const (
	sheet1Header = "\"Type \n(XID)\",Code,Mnemonic,Description,\"Applies to\nA100\",\"Applies to\nH100\",\"Applies to\nB100\",\"Applies to\nGB200\",\"Resolution Bucket \n(Immediate Action)\",\"Resolution Bucket \n(Investigatory Action)\",Xid 154 linkage,Trigger Conditions\r\n"
	sheet2Header = "Xid,Subcode,(V1(<R575)) IntrInfo decode,(V2(>=R575)) IntrInfo decode,Error Status (hex),\"Resolution Bucket \n(Data Center Recovery Action)\",(V1(<R575)) Decode for action 2,(V2(>=R575)) Decode for action 2,Action 2,Resolution Bucket (Investigatory Action),Severity,HW/SW,Local/Remote\r\n"
	sheet3Header = "Guidance Class,Resolution Action\r\n"
)

func TestParseXids(t *testing.T) {
	tests := []struct {
		name    string
		rows    string
		want    []Xid
		wantErr string
	}{
		{
			name: "sorted by code, cells kept as written",
			rows: "XID,79,FALLEN,GPU has fallen off the bus,YES,YES,YES,YES,RESTART_BM,CONTACT_SUPPORT,,\"two\nlines \"\r\n" +
				"XID,13,GR,Graphics Engine Exception,YES,NO,NO,NO,RESTART_APP,WORKFLOW_XID_13,,\r\n",
			want: []Xid{
				{Code: 13, Mnemonic: "GR", Description: "Graphics Engine Exception", A100: true, Immediate: "RESTART_APP", Investigatory: "WORKFLOW_XID_13"},
				{Code: 79, Mnemonic: "FALLEN", Description: "GPU has fallen off the bus", A100: true, H100: true, B100: true, GB200: true, Immediate: "RESTART_BM", Investigatory: "CONTACT_SUPPORT", Trigger: "two\nlines "},
			},
		},
		{name: "duplicate code", rows: "XID,1,A,a,NO,NO,NO,NO,,,,\r\nXID,1,B,b,NO,NO,NO,NO,,,,\r\n", wantErr: "listed twice"},
		{name: "bad applies-to", rows: "XID,1,A,a,Y,NO,NO,NO,,,,\r\n", wantErr: "want YES or NO"},
		{name: "bad code", rows: "XID,one,A,a,NO,NO,NO,NO,,,,\r\n", wantErr: "not a positive integer"},
		{name: "bad type", rows: "SXID,1,A,a,NO,NO,NO,NO,,,,\r\n", wantErr: "want XID"},
		{name: "short row", rows: "XID,1,A\r\n", wantErr: "read csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseXids(strings.NewReader(sheet1Header + tt.rows))
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d rows, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("row %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseXidsHeader(t *testing.T) {
	swapped := strings.Replace(sheet1Header, "Mnemonic,Description", "Description,Mnemonic", 1)
	_, err := ParseXids(strings.NewReader(swapped))
	checkErr(t, err, "has the sheet changed layout")
	_, err = ParseXids(strings.NewReader(""))
	checkErr(t, err, "empty")
}

func TestParseDecodes(t *testing.T) {
	const ok = "------000000----------0000100001,------000000-------------0000001"
	tests := []struct {
		name    string
		row     string
		check   func(t *testing.T, d Decode)
		wantErr string
	}{
		{
			name: "subcodes from the pattern bits",
			row:  "146,TLW_RX/TLW_RX_PIPE1,------000000----------0101000011,------000000-------------0001011,0x00000004,RESET_GPU,,,,CONTACT_SUPPORT,Fatal,HW,x",
			check: func(t *testing.T, d Decode) {
				// V1 IntrInfo[9:5] = 01010 = 10; V2 IntrInfo[6:0] = 0001011 = 11.
				if d.SubcodeV1 != 10 || d.SubcodeV2 != 11 || d.SubcodeV1Name != "TLW_RX" || d.SubcodeV2Name != "TLW_RX_PIPE1" {
					t.Errorf("subcodes %d %q / %d %q", d.SubcodeV1, d.SubcodeV1Name, d.SubcodeV2, d.SubcodeV2Name)
				}
				if len(d.ErrorStatus) != 1 || d.ErrorStatus[0] != 4 {
					t.Errorf("error status %v", d.ErrorStatus)
				}
			},
		},
		{
			name: "two statuses, no slash in subcode",
			row:  "150,MSE Degraded,------000000----------0000000000,------000000-------------0000000,0x00000000/0xFFFFFFFF,RESET_GPU,,,,CONTACT_SUPPORT,Fatal,FW,x",
			check: func(t *testing.T, d Decode) {
				if d.SubcodeV1Name != "MSE Degraded" || d.SubcodeV2Name != "MSE Degraded" || len(d.ErrorStatus) != 2 || d.ErrorStatus[1] != 0xFFFFFFFF {
					t.Errorf("got %+v", d)
				}
			},
		},
		{
			name: "blank status is any",
			row:  "149,NETIR/NETIR_INT,------000000----------0000000110,------000000-------------0011000,,RESET_GPU,,,,X,Link Fatal,HW/SW,x",
			check: func(t *testing.T, d Decode) {
				if d.ErrorStatus != nil {
					t.Errorf("error status %v, want none", d.ErrorStatus)
				}
			},
		},
		{name: "xid out of range", row: "143,X," + ok + ",0x1,IGNORE,,,,X,Y,Z,W", wantErr: "144..150"},
		{name: "short pattern", row: "144,X,0000,------000000-------------0000001,0x1,IGNORE,,,,X,Y,Z,W", wantErr: "want 32"},
		{name: "bad pattern character", row: "144,X,------000000----------000010000x,------000000-------------0000001,0x1,IGNORE,,,,X,Y,Z,W", wantErr: "not 0, 1 or -"},
		{name: "subcode bits open", row: "144,X,------000000----------00-0100001,------000000-------------0000001,0x1,IGNORE,,,,X,Y,Z,W", wantErr: "leaves bit 7 open"},
		{name: "bad status", row: "144,X," + ok + ",1,IGNORE,,,,X,Y,Z,W", wantErr: "want 0x"},
		{name: "action 2 without action", row: "144,X," + ok + ",0x1,IGNORE," + ok + ",,X,Y,Z,W", wantErr: "without an action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDecodes(strings.NewReader(sheet2Header + tt.row + "\r\n"))
			checkErr(t, err, tt.wantErr)
			if tt.wantErr == "" {
				tt.check(t, got[0])
			}
		})
	}
}

func TestParseBuckets(t *testing.T) {
	tests := []struct {
		name    string
		rows    string
		want    []Bucket
		wantErr string
	}{
		{
			name: "sorted, identical duplicate dropped",
			rows: "RESET_GPU,reset\r\nIGNORE,nothing\r\nRESET_GPU,reset\r\n",
			want: []Bucket{{"IGNORE", "nothing"}, {"RESET_GPU", "reset"}},
		},
		{name: "conflicting duplicate", rows: "IGNORE,a\r\nIGNORE,b\r\n", wantErr: "different meanings"},
		{name: "blank name", rows: ",a\r\n", wantErr: "blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBuckets(strings.NewReader(sheet3Header + tt.rows))
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	_, err := Load(t.TempDir())
	checkErr(t, err, "cannot open xid catalog sheet")
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}
