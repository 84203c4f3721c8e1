package broken

func ok() {}

func bad( {
}

type T struct{}
