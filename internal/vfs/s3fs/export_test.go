package s3fs

// SetPageSize makes f list n objects per request, so that tests page
// through listings with few objects.
func SetPageSize(f *FS, n int) { f.pageSize = n }
